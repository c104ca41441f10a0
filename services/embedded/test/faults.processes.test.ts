import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import {
  eventually,
  freePort,
  natsServerBinary,
  postgresUnavailable,
  realInfra,
  redisServerBinary,
  startBackends,
  startGatewayProcess,
  startNatsServer,
  startPostgresServer,
  startProcess,
  startRedisServer,
  type GatewayProcess,
  type NatsServer,
  type PostgresServer,
  type Proc,
  type RedisServer,
} from '@costgov/testing';

const bootstrapKey = 'cg_live_faultsprocessesbootstrap00000000';
const namespace = 'faults';
/** Writers, each with a key of its own, each well under its key's 2 requests a second after the burst. */
const writers = 4;
const writeEveryMs = 400;
const outageMs = 2_000;
const recoveryMs = 5_000;
/** How long the load runs after recovery before the next fault: every request of it must succeed. */
const servedMs = 1_500;

const missing = [
  postgresUnavailable(),
  natsServerBinary() ? undefined : 'nats-server not found',
  redisServerBinary() ? undefined : 'redis-server not found',
].filter(Boolean);
const skipReason = !realInfra
  ? 'runs in the real-infrastructure pass'
  : missing.length > 0
    ? missing.join('; ')
    : undefined;

interface Outcome {
  name: string;
  startedAt: number;
  status: number; // 0: no HTTP answer (a dropped connection, a timeout)
  retryAfter: string | null;
  id?: string;
  error?: string;
}

interface Phase {
  component: 'postgres' | 'nats' | 'redis';
  killedAt: number;
  returnedAt: number;
  /** When a create and a list first succeeded again after the component returned. */
  recoveredAt: number;
  /** When the next phase's kill started (or the load stopped). */
  endedAt: number;
}

/**
 * kill -9 of Postgres, then NATS, then Redis (each a private instance of this file) under a steady load
 * of project creates through the REST API, with identity, budgets, violations and the gateway as their
 * own processes: nothing exits, an outage answers 503 with Retry-After and never 500 or a dropped
 * connection, service is back within 5 s of the component's return, and every acknowledged create is
 * stored exactly once and published exactly once.
 */
describe.skipIf(skipReason)(`faults under write load${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const procs: Proc[] = [];
  let postgres: PostgresServer;
  let nats: NatsServer;
  let redis: RedisServer;
  let gateway: GatewayProcess;
  let identityClient: RpcClient<typeof identity.IdentityService>;
  let teamId = '';
  const keys: string[] = [];

  const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

  /**
   * Processes that exited, or would have: the process guard keeps a process alive after an uncaught
   * exception (an unhandled 'error' event, say) and logs it, so such a line counts as a crash here.
   */
  const alive = () =>
    procs.flatMap((proc) => {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null)
        return [`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}):\n${proc.output()}`];
      const escaped = proc
        .output()
        .split('\n')
        .filter((line) => line.includes('caught by the process guard'));
      return escaped.length > 0 ? [`${proc.name}: ${escaped.join('\n')}`] : [];
    });

  beforeAll(async () => {
    [postgres, nats, redis] = await Promise.all([
      startPostgresServer(),
      startNatsServer(),
      startRedisServer(),
    ]);
    const backends = await startBackends(
      {
        DATABASE_URL: postgres.url,
        NATS_URL: nats.url,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: bootstrapKey,
      },
      procs,
    );
    gateway = await startGatewayProcess(
      'gateway',
      backends,
      { REDIS_URL: redis.url, RATE_LIMIT_REDIS_TIMEOUT_MS: '250' },
      procs,
    );
    identityClient = createRpcClient(identity.IdentityService, backends.identity);
    teamId = (await identityClient.listTeams({})).teams[0]!.id;
    keys.push(bootstrapKey);
    for (let i = 1; i < writers; i++) {
      const key = await identityClient.createApiKey(
        { name: `writer-${i}`, scopes: ['guard:read', 'guard:write'] },
        { teamId },
      );
      keys.push(key.secret);
    }
  }, 240_000); // four processes booting on a loaded two-core machine

  afterAll(async () => {
    identityClient?.close();
    await Promise.all(procs.map((proc) => proc.stop()));
    await Promise.all([postgres?.close(), nats?.close(), redis?.close()]);
  }, 60_000);

  async function create(key: string, name: string): Promise<Outcome> {
    const startedAt = Date.now();
    try {
      const response = await fetch(`${gateway.url}/v1/guard/projects`, {
        method: 'POST',
        headers: headers(key),
        body: JSON.stringify({ name }),
        signal: AbortSignal.timeout(15_000),
      });
      const body = (await response.json()) as { data?: { id: string } };
      return {
        name,
        startedAt,
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        id: body.data?.id,
      };
    } catch (error) {
      return { name, startedAt, status: 0, retryAfter: null, error: String(error) };
    }
  }

  /** Every project of the team, page by page. */
  async function listAll(): Promise<Array<{ id: string; name: string }>> {
    const all: Array<{ id: string; name: string }> = [];
    for (let page = 1; ; page++) {
      const response = await fetch(`${gateway.url}/v1/guard/projects?per_page=100&page=${page}`, {
        headers: headers(bootstrapKey),
      });
      expect(response.status).toBe(200);
      const { data } = (await response.json()) as { data: Array<{ id: string; name: string }> };
      all.push(...data);
      if (data.length < 100) return all;
    }
  }

  /**
   * Polls until a create and a list through the gateway and a read of identity's own data all succeed
   * (the load's keys are cached by the gateway, so identity needs asking directly); the time they first did.
   */
  async function recovered(key: string, label: string): Promise<number> {
    let attempt = 0;
    return eventually(async () => {
      const created = await create(key, `probe-${label}-${attempt++}`);
      if (created.status !== 201) return undefined;
      const listed = await fetch(`${gateway.url}/v1/guard/projects?per_page=1`, { headers: headers(key) });
      if (listed.status !== 200) return undefined;
      const keysListed = await identityClient.listApiKeys({}, { teamId }).then(
        () => true,
        () => false,
      );
      return keysListed ? Date.now() : undefined;
    }, 30_000);
  }

  it('rides out kill -9 of Postgres, NATS and Redis: no exit, 503 meanwhile, back within 5 s, nothing lost or doubled', async () => {
    const outcomes: Outcome[] = [];
    let loading = true;
    const load = Array.from({ length: writers }, async (_, writer) => {
      for (let n = 0; loading; n++) {
        const started = Date.now();
        outcomes.push(await create(keys[writer]!, `load-${writer}-${n}`));
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(0, writeEveryMs - (Date.now() - started))),
        );
      }
    });

    const phases: Phase[] = [];
    const components = { postgres, nats, redis };
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // load before the first fault
    for (const component of ['postgres', 'nats', 'redis'] as const) {
      const server = components[component];
      const killedAt = Date.now();
      if (phases.length > 0) phases.at(-1)!.endedAt = killedAt;
      await server.kill();
      await new Promise((resolve) => setTimeout(resolve, outageMs));
      expect(alive()).toEqual([]);
      await server.start();
      const returnedAt = Date.now();
      const recoveredAt = await recovered(keys[0]!, component);
      expect(recoveredAt - returnedAt, `${component}: service back after its return`).toBeLessThan(
        recoveryMs,
      );
      phases.push({ component, killedAt, returnedAt, recoveredAt, endedAt: Infinity });
      // From then on the load must be served normally; give it a while before the next fault.
      await new Promise((resolve) => setTimeout(resolve, servedMs));
    }
    loading = false;
    await Promise.all(load);
    phases.at(-1)!.endedAt = Date.now();
    expect(alive()).toEqual([]);

    // Never a dropped connection nor a 500; an outage is a 503 that says when to retry.
    const unexpected = outcomes.filter((o) => o.status !== 201 && o.status !== 503);
    expect(unexpected).toEqual([]);
    expect(outcomes.filter((o) => o.status === 503 && o.retryAfter === null)).toEqual([]);
    // Every fault was felt by the load or was ridden out: the test had requests in every phase.
    for (const phase of phases) {
      const during = outcomes.filter((o) => o.startedAt >= phase.killedAt && o.startedAt < phase.returnedAt);
      expect(during.length, `${phase.component}: requests during the outage`).toBeGreaterThan(0);
      // Postgres down must show (or the test is not killing what it thinks); NATS and Redis down must not.
      if (phase.component === 'postgres') expect(during.some((o) => o.status === 503)).toBe(true);
      const after = outcomes.filter((o) => o.startedAt >= phase.recoveredAt && o.startedAt < phase.endedAt);
      expect(after.length, `${phase.component}: requests after recovery`).toBeGreaterThan(0);
      expect(
        after.filter((o) => o.status !== 201),
        `${phase.component}: failures once service was back`,
      ).toEqual([]);
    }
    // A broker or limiter outage costs no write at all: only Postgres may answer 503.
    const natsAndRedis = phases.filter((p) => p.component !== 'postgres');
    expect(
      outcomes.filter(
        (o) =>
          o.status !== 201 && natsAndRedis.some((p) => o.startedAt >= p.killedAt && o.startedAt < p.endedAt),
      ),
    ).toEqual([]);

    // Every acknowledged create is stored once (a 503 may or may not have been stored; never twice).
    const stored = await listAll();
    const storedIds = new Map<string, number>();
    for (const project of stored) storedIds.set(project.id, (storedIds.get(project.id) ?? 0) + 1);
    const storedNames = new Set(stored.map((project) => project.name));
    const acknowledged = outcomes.filter((o) => o.status === 201);
    expect(acknowledged.length).toBeGreaterThan(50);
    expect(acknowledged.filter((o) => storedIds.get(o.id!) !== 1)).toEqual([]);
    expect(acknowledged.filter((o) => !storedNames.has(o.name))).toEqual([]);
    expect(stored.length).toBe(new Set(stored.map((project) => project.name)).size);

    // The relay published every stored project's creation exactly once, NATS outage included.
    const db = new pg.Client({ connectionString: postgres.url });
    await db.connect();
    const nc = await connect({ servers: nats.url });
    try {
      await eventually(async () => {
        const { rows } = await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM budgets.outbox WHERE published_at IS NULL',
        );
        return rows[0]!.n === 0 ? true : undefined;
      }, 20_000);
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(`${namespace}_BUDGETS`.toUpperCase(), {
        subjects_filter: `${namespace}.budgets.project.created`,
      });
      expect(info.state.subjects?.[`${namespace}.budgets.project.created`]).toBe(stored.length);
    } finally {
      await nc.close();
      await db.end();
    }
  }, 120_000);

  it('still consumes events after the restarts: a deleted project is purged by violations', async () => {
    const created = await create(keys[0]!, 'purged-after-faults');
    expect(created.status).toBe(201);
    const deleted = await fetch(`${gateway.url}/v1/guard/projects/${created.id}`, {
      method: 'DELETE',
      headers: headers(keys[0]!),
    });
    expect(deleted.status).toBe(204);
    const db = new pg.Client({ connectionString: postgres.url });
    await db.connect();
    try {
      await eventually(async () => {
        const { rows } = await db.query('SELECT 1 FROM violations.project_purges WHERE project_id = $1', [
          created.id,
        ]);
        return rows.length === 1 ? true : undefined;
      }, 20_000);
    } finally {
      await db.end();
    }
    expect(alive()).toEqual([]);
  }, 30_000);
});

describe('a process started with NATS unreachable', () => {
  // Concurrent: most of each case is the process booting.
  it.concurrent.for(['budgets', 'gateway'])(
    '%s logs why it retries, then exits non-zero with a clear message after NATS_CONNECT_TIMEOUT_MS',
    { timeout: 90_000 },
    async (name, { expect }) => {
      const [natsPort, port, grpcPort, metricsPort] = await Promise.all(Array.from({ length: 4 }, freePort));
      const proc = startProcess(name, `services/${name}/src/main.ts`, {
        NATS_URL: `nats://127.0.0.1:${natsPort}`,
        NATS_CONNECT_TIMEOUT_MS: '1500',
        DATABASE_URL: '',
        REDIS_URL: '',
        DATA_DIR: 'memory',
        PORT: `${port}`,
        GRPC_PORT: `${grpcPort}`,
        METRICS_PORT: `${metricsPort}`,
      });
      try {
        const code = await new Promise<number | null>((resolve) => proc.child.once('exit', resolve));
        expect(code).not.toBe(0);
        expect(code).not.toBeNull();
        const output = proc.output();
        expect(output).toContain('cannot connect to NATS; retrying');
        expect(output).toContain('ECONNREFUSED');
        expect(output).toMatch(
          new RegExp(`Cannot connect to NATS at nats://127\\.0\\.0\\.1:${natsPort} within 1500 ms`),
        );
      } finally {
        await proc.stop();
      }
    },
  );
});
