import { z } from 'zod';

export { z };

export class ConfigError extends Error {}

/**
 * Parses the environment with a zod schema once, at start, and freezes the result. A failure names
 * every offending variable, so the process can exit with a message an operator can act on.
 */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): Readonly<z.infer<S>> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const variable = issue.path.join('.') || '(environment)';
      // A message written for the variable already names it ("GUARD_BOOTSTRAP_API_KEY is a placeholder").
      return `  ${issue.message.startsWith(variable) ? '' : `${variable}: `}${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze(result.data);
}

type OutputOfAll<T extends readonly z.ZodType[]> = T extends readonly [
  infer First extends z.ZodType,
  ...infer Rest extends readonly z.ZodType[],
]
  ? z.infer<First> & OutputOfAll<Rest>
  : unknown;

/**
 * Several schemas read from one environment as one: the result has every schema's variables, and a
 * failure lists the bad variables of all of them. A variable two schemas share must parse alike in both.
 */
export function allOf<T extends readonly [z.ZodType, ...z.ZodType[]]>(
  ...schemas: T
): z.ZodType<OutputOfAll<T>> {
  const [first, ...rest] = schemas;
  return rest.reduce<z.ZodType>((all, schema) => z.intersection(all, schema), first) as z.ZodType<
    OutputOfAll<T>
  >;
}

/** The names of the variables a schema reads: its objects' keys, through allOf and refinements. */
export function variablesOf(schema: z.ZodType): string[] {
  if (schema instanceof z.ZodObject) return Object.keys(schema.shape);
  if (schema instanceof z.ZodIntersection)
    return [
      ...new Set([
        ...variablesOf(schema.def.left as z.ZodType),
        ...variablesOf(schema.def.right as z.ZodType),
      ]),
    ];
  if (schema instanceof z.ZodPipe) return variablesOf(schema.def.in as z.ZodType);
  return [];
}

/** Like loadConfig, but prints the message and exits: for composition roots. */
export function loadConfigOrExit<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): Readonly<z.infer<S>> {
  try {
    return loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

/** Common variables. Every service reads these; each adds its own. */
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/**
 * METRICS_HOST: where /metrics and /healthz listen. Loopback by default: the metrics tell routes,
 * volumes and backlogs to whoever reaches them, so opening them (0.0.0.0 in the deploy files, for
 * Prometheus and the probes) is the deployment's choice.
 */
export const metricsHost = z
  .string()
  .trim()
  .min(1, 'must be an address, e.g. 127.0.0.1 or 0.0.0.0')
  .default('127.0.0.1');
export const optionalUrl = z
  .string()
  .url()
  .optional()
  .or(z.literal('').transform(() => undefined));

export const baseConfig = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().min(1).default('.data'),
  DATABASE_URL: optionalUrl,
  NATS_URL: optionalUrl,
  /** How long a process keeps trying to reach NATS at start before it exits with the reason. */
  NATS_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** Replicas of every JetStream stream: 1 on one server, 3 on a cluster (deploy/). */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** How long a stream keeps an event, in hours; 0 keeps them until NATS_STREAM_MAX_BYTES. */
  NATS_STREAM_MAX_AGE_HOURS: z.coerce.number().int().min(0).default(168),
  /** Size limit of each stream in bytes; 0 is unlimited. A full stream refuses new events (the outbox retries). */
  NATS_STREAM_MAX_BYTES: z.coerce.number().int().min(0).default(0),
  REDIS_URL: optionalUrl,
  /**
   * `on`: REDIS_URL is one node (a seed) of a Redis Cluster, reached through ioredis' cluster client,
   * which learns every master from it; `off`: one Redis server.
   */
  REDIS_CLUSTER: z.enum(['on', 'off']).default('off'),
  /** Prefix of NATS subjects and stream names; lets several deployments (or test runs) share one server. */
  EVENT_NAMESPACE: z
    .string()
    .regex(/^[a-z][a-z0-9_]*$/, 'lower-case letters, digits and underscores, starting with a letter')
    .default('costgov'),
  RPC_DEADLINE_MS: z.coerce.number().int().positive().default(5000),
});

/**
 * After SIGTERM, how long a process keeps serving while its readiness fails, so that load balancers stop
 * sending before it stops accepting. Unset: 5000 ms in production, 0 elsewhere (tests, a laptop).
 */
export const shutdownDrainMs = z.coerce.number().int().min(0).optional();

/** SHUTDOWN_DRAIN_MS, or its default for NODE_ENV. */
export const drainMsOf = (config: { SHUTDOWN_DRAIN_MS?: number; NODE_ENV: string }): number =>
  config.SHUTDOWN_DRAIN_MS ?? (config.NODE_ENV === 'production' ? 5_000 : 0);
