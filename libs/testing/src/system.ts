import assert from 'node:assert/strict';
import { loadConfig, type z } from '@costgov/config';
import { identity } from '@costgov/contracts';
import type { Bus } from '@costgov/bus';
import type { Db } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { createRpcClient } from '@costgov/rpc';
import { freshDb, testBus } from './fresh';
import { testLogger } from './loggers';

/** What a test needs of a running system: the gateway's URL and where each service listens. */
export interface SystemShape {
  url: string;
  services: Array<{ name: string; port: number }>;
  bootstrap?: { teamId: string };
  stop(): Promise<void>;
}

/**
 * The embedded system's entry points, `startSystem` and `systemConfig` of @costgov/embedded, which the test
 * hands in: this package sits below the services, so it names their shape and never imports them.
 */
export interface EmbeddedSystem<Schema extends z.ZodType, System extends SystemShape> {
  systemConfig: Schema;
  startSystem(
    config: Readonly<z.infer<Schema>>,
    logger: Logger,
    options: {
      env?: NodeJS.ProcessEnv;
      quietBootstrap?: boolean;
      openDb?: (service: string) => Promise<Db>;
      bus?: Bus;
      anyPorts?: boolean;
    },
  ): Promise<System>;
}

export interface SystemUnderTestOptions {
  /** GUARD_BOOTSTRAP_API_KEY: the first key of the team `default`, which every start on a fresh database makes. */
  bootstrapKey: string;
  /** Gateway settings besides loopback, a free port and in-memory storage (e.g. REDIS_URL). */
  config?: Record<string, string>;
  /** The services' variables besides the bootstrap key (e.g. OAUTH_*); only these, not the test process's. */
  env?: NodeJS.ProcessEnv;
  /** The system's logger; testLogger() by default. */
  logger?: Logger;
  /**
   * `test` (the default): a bus of its own, closed with the system (a NATS namespace of its own on the
   * real-infrastructure pass). `configured`: the bus the configuration names, as `npm start` connects it.
   */
  bus?: 'test' | 'configured';
}

/**
 * Every service and the gateway in this process, as `npm start` composes them, on fresh databases (a
 * PGlite each, or fresh schemas on DATABASE_URL's Postgres) and free loopback ports.
 */
export async function startSystemUnderTest<Schema extends z.ZodType, System extends SystemShape>(
  embedded: EmbeddedSystem<Schema, System>,
  options: SystemUnderTestOptions,
): Promise<System & { namespace?: string }> {
  const logger = options.logger ?? testLogger();
  const config = loadConfig(embedded.systemConfig, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: 'memory',
    ...options.config,
  });
  // The bus's own logger stays quiet: a test that captures the system's lines wants the services' only.
  const bus = options.bus === 'configured' ? undefined : await testBus(testLogger());
  const system = await embedded.startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: options.bootstrapKey, ...options.env },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    ...(bus ? { bus } : {}),
  });
  return Object.assign(system, bus ? { namespace: bus.namespace } : {});
}

/** host:port of one service of a running system. */
export function serviceAddress(system: SystemShape, name: string): string {
  const service = system.services.find((s) => s.name === name);
  if (!service) throw new Error(`the system runs no service called ${name}`);
  return `127.0.0.1:${service.port}`;
}

/** A system for REST tests, with the keys most tests need besides the bootstrap one. */
export interface RestSystem<System extends SystemShape> {
  system: System;
  /** The team `default`, whose key is the bootstrap key. */
  teamId: string;
  /** guard:read and guard:write of another team: its view of our ids must be 404. */
  otherTeamKey: string;
  /** guard:read only, of the bootstrap team. */
  readOnlyKey: string;
  /** The bus's subject namespace (a fresh one per system), for consumers on NATS. */
  namespace: string;
}

/** startSystemUnderTest, then another team with a key of its own and a read-only key of the bootstrap team. */
export async function startRestSystem<Schema extends z.ZodType, System extends SystemShape>(
  embedded: EmbeddedSystem<Schema, System>,
  bootstrapKey: string,
  options: Omit<SystemUnderTestOptions, 'bootstrapKey' | 'bus'> = {},
): Promise<RestSystem<System>> {
  const system = await startSystemUnderTest(embedded, { ...options, bootstrapKey });
  const teamId = system.bootstrap!.teamId;
  const identityClient = createRpcClient(identity.IdentityService, serviceAddress(system, 'identity'));
  try {
    const other = await identityClient.createTeam({ name: 'other', plan: 'team' });
    const otherTeamKey = (
      await identityClient.createApiKey(
        { name: 'ci', scopes: ['guard:read', 'guard:write'] },
        { teamId: other.id },
      )
    ).secret;
    const readOnlyKey = (
      await identityClient.createApiKey({ name: 'dashboard', scopes: ['guard:read'] }, { teamId })
    ).secret;
    return { system, teamId, otherTeamKey, readOnlyKey, namespace: system.namespace! };
  } finally {
    identityClient.close();
  }
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface CallOptions {
  /** The credential; the bootstrap key when absent, none when null. */
  key?: string | null;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is (malformed JSON, other media types). */
  raw?: string;
  /** Content-Type of a body; application/json by default. */
  contentType?: string;
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

/** One REST call of a test: JSON in, the status, headers and parsed body out. */
export function restCaller(baseUrl: () => string, bootstrapKey: string) {
  return async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? bootstrapKey : options.key;
    if (key) headers.authorization = `Bearer ${key}`;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    if (body !== undefined) headers['content-type'] ??= options.contentType ?? 'application/json';
    const response = await fetch(`${baseUrl()}${path}`, { method, headers, body });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: text ? JSON.parse(text) : undefined,
    };
  };
}

/**
 * An error answer in the Guard envelope (`code`, a message, a list of details) with its request id.
 * node:assert, not vitest's expect: this package is also loaded outside vitest (the benchmark).
 */
export function expectError(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, reply.text);
  const error = (reply.body as { error?: Record<string, unknown> } | undefined)?.error;
  assert.ok(error && typeof error === 'object', `no error envelope: ${reply.text}`);
  assert.equal(error.code, code, reply.text);
  assert.equal(typeof error.message, 'string', `error.message is not a string: ${reply.text}`);
  assert.ok(Array.isArray(error.details), `error.details is not a list: ${reply.text}`);
  assert.ok(reply.headers.get('x-request-id'), 'no X-Request-Id header');
}
