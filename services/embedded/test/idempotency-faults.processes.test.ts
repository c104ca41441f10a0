import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import {
  createTestDatabase,
  deleteStreams,
  eventually,
  realInfra,
  redisServerBinary,
  startBackends,
  startGatewayProcess,
  startRedisServer,
  uniqueName,
  type Backends,
  type GatewayProcess,
  type Proc,
  type RedisServer,
  type TestDatabase,
  killProcess,
  restartBackend,
} from '@costgov/testing';

const apiKey = 'cg_live_idempotencyfaultsbootstrap0000000';
/** Startup of a process on a loaded two-core machine. */
const slow = 120_000;
/** Keyed creates and keyed scans in flight when a component is killed, per fault. */
const perKind = 100;
/** Abandoned scan charges are given back after this long (SCAN_CHARGE_GRACE_MS, at least 4 RPC deadlines). */
const chargeGraceMs = 20_000;

const skipReason = !realInfra
  ? 'runs in the real-infrastructure pass'
  : redisServerBinary()
    ? undefined
    : 'redis-server not found';

interface Answer {
  status: number; // 0: no HTTP answer (a connection dropped by a kill)
  id?: string;
  replayed: boolean;
  code?: string;
  /** The fields the error names: `Idempotency-Key` for a key held by a request still running. */
  fields?: string[];
}

/** One key's story: every answer it got, until a definitive one. */
interface Keyed {
  key: string;
  kind: 'project' | 'scan';
  name: string;
  answers: Answer[];
}

/**
 * Issue 16: Idempotency-Key is exactly once across a crash. 100 keyed project creates and 100 keyed scans
 * are in flight when the gateway, then the owning services (budgets and the scanner), then Redis are
 * killed with SIGKILL; every key is retried until it is answered, as a client following the
 * draft-ietf-httpapi-idempotency-key-header would. Each key makes exactly one resource, every answer of a
 * key carries the same id, each stored scan is charged one credit, and a scan that was never stored
 * costs nothing once its charge's grace has passed.
 */
describe.skipIf(skipReason)(
  `Idempotency-Key across kill -9${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const namespace = uniqueName('idemfaults');
    const procs: Proc[] = [];
    let database: TestDatabase;
    let backends: Backends;
    let redis: RedisServer;
    let gateway: GatewayProcess;
    let url = '';
    let identityClient: RpcClient<typeof identity.IdentityService>;
    let db: pg.Client;
    let teamId = '';
    let scannedProjectId = '';
    let initialCredits = 0;
    const all: Keyed[] = [];

    const gatewayEnv = () => ({
      REDIS_URL: redis.url,
      RATE_LIMIT_REDIS_TIMEOUT_MS: '250',
      // A dead gateway's keys stay locked this long (409 meanwhile); above RPC_DEADLINE_MS.
      IDEMPOTENCY_LOCK_TTL_MS: '6000',
    });

    const kill = (name: string) => killProcess(procs, name);
    const restart = async (name: 'budgets' | 'scanner') =>
      void (await restartBackend(name, backends, procs, url, { timeoutMs: slow }));

    /** One POST with the key; the answer as a client sees it. */
    async function post(one: Keyed): Promise<Answer> {
      const [path, body] =
        one.kind === 'project'
          ? ['/v1/guard/projects', { name: one.name }]
          : ['/v1/guard/scans', { project_id: scannedProjectId }];
      try {
        const response = await fetch(`${url}${path}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${apiKey}`,
            'content-type': 'application/json',
            'idempotency-key': one.key,
          },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(20_000),
        });
        const parsed = (await response.json()) as {
          data?: { id: string };
          error?: { code: string; details: Array<{ field: string }> };
        };
        return {
          status: response.status,
          id: parsed.data?.id,
          replayed: response.headers.get('idempotent-replayed') === 'true',
          ...(parsed.error && { code: parsed.error.code, fields: parsed.error.details.map((d) => d.field) }),
        };
      } catch {
        return { status: 0, replayed: false };
      }
    }

    /** A 409 for the key: held by a request still running, or by one whose end could not be stored. */
    const keyHeld = (answer: Answer) =>
      answer.status === 409 && (answer.fields ?? []).includes('Idempotency-Key');

    /**
     * Retries the key until a definitive answer: a dropped connection, a 503, a 429 and a 409 for a key
     * still held by the request the kill interrupted are all "not yet"; any other answer is final.
     */
    async function untilAnswered(one: Keyed, deadline: number): Promise<void> {
      for (;;) {
        const answer = await post(one);
        one.answers.push(answer);
        const notYet =
          answer.status === 0 || answer.status === 503 || answer.status === 429 || keyHeld(answer);
        if (!notYet) return;
        if (Date.now() > deadline) return;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }

    /** 100 keyed creates and 100 keyed scans; `fault` strikes once a fifth of them are answered. */
    async function underFault(label: string, fault: () => Promise<void>): Promise<Keyed[]> {
      const batch: Keyed[] = [
        ...Array.from({ length: perKind }, (_, i) => ({
          key: randomUUID(),
          kind: 'project' as const,
          name: `${label}-${i}`,
          answers: [],
        })),
        ...Array.from({ length: perKind }, (_, i) => ({
          key: randomUUID(),
          kind: 'scan' as const,
          name: `${label}-scan-${i}`,
          answers: [],
        })),
      ];
      all.push(...batch);
      const deadline = Date.now() + 4 * slow;
      let answered = 0;
      const struck = (async () => {
        await eventually(() => (answered >= batch.length / 5 ? true : undefined), slow);
        await fault();
      })();
      await Promise.all([
        ...batch.map((one) => untilAnswered(one, deadline).then(() => void answered++)),
        struck,
      ]);
      return batch;
    }

    /** How the batch's answers went (printed, so a run shows that the fault struck requests in flight). */
    function summary(label: string, batch: Keyed[]): Record<string, number> {
      const counts: Record<string, number> = {};
      for (const one of batch)
        for (const answer of one.answers) {
          const name = `${one.kind} ${answer.status}${answer.replayed ? ' replayed' : ''}`;
          counts[name] = (counts[name] ?? 0) + 1;
        }
      console.log(label, JSON.stringify(counts));
      return counts;
    }

    /**
     * One more POST with the key, as a client that lost the answer would send it, waiting out a 409 for the
     * key: the answer of a request whose record could not be stored (Redis was down as it ended) leaves
     * the key locked until IDEMPOTENCY_LOCK_TTL_MS, and a retry meanwhile is told to come back (409,
     * Retry-After), as the API documents.
     */
    async function askAgain(one: Keyed): Promise<Answer> {
      const deadline = Date.now() + 3 * 6_000;
      for (;;) {
        const answer = await post(one);
        if (!keyHeld(answer) || Date.now() > deadline) return answer;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }

    /**
     * What every key of a batch must have come to. Each key is then asked once more: the same answer,
     * replayed (from Redis, or from the service once Redis lost it).
     */
    async function expectEachKeyOnce(batch: Keyed[]): Promise<void> {
      const again = await Promise.all(batch.map((one) => askAgain(one)));
      batch.forEach((one, i) => {
        const final = one.answers.at(-1)!;
        expect(again[i], `${one.kind} ${one.key} asked again`).toEqual({ ...final, replayed: true });
      });
      for (const one of batch) {
        const final = one.answers.at(-1)!;
        expect(final.status, `${one.kind} ${one.key}: ${JSON.stringify(one.answers)}`).toBe(
          one.kind === 'project' ? 201 : 202,
        );
        const ids = new Set(one.answers.filter((a) => a.id !== undefined).map((a) => a.id));
        expect([...ids], `${one.kind} ${one.key}: every answer carries the original id`).toHaveLength(1);
      }
    }

    beforeAll(async () => {
      redis = await startRedisServer();
      database = await createTestDatabase('idemfaults');
      backends = await startBackends(
        {
          DATABASE_URL: database.url,
          NATS_URL: process.env.NATS_URL,
          EVENT_NAMESPACE: namespace,
          GUARD_BOOTSTRAP_API_KEY: apiKey,
          SCAN_CHARGE_GRACE_MS: String(chargeGraceMs),
          SCAN_HEARTBEAT_MS: '1000',
          SCAN_ACK_WAIT_MS: '5000',
          SCAN_STALE_MS: '20000',
        },
        procs,
      );
      gateway = await startGatewayProcess('gateway', backends, gatewayEnv(), procs);
      url = gateway.url;
      identityClient = createRpcClient(identity.IdentityService, backends.identity);
      db = new pg.Client({ connectionString: database.url });
      await db.connect();
      teamId = (await identityClient.listTeams({})).teams.find((t) => t.name === 'default')!.id;
      await identityClient.setTeamLimits({
        teamId,
        apiRequestsPerMinute: 1_000_000,
        apiConcurrentRequests: 1_000,
      });
      await identityClient.grantScanCredits({ teamId, credits: 10_000n });
      initialCredits = Number((await identityClient.getTeam({ id: teamId })).scanCredits);
      const project = await fetch(`${url}/v1/guard/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'scanned' }),
      });
      scannedProjectId = ((await project.json()) as { data: { id: string } }).data.id;
    }, 2 * slow);

    afterAll(async () => {
      identityClient?.close();
      await db?.end();
      await Promise.all(procs.map((p) => p.stop()));
      await redis?.close();
      await database?.drop();
      await deleteStreams(process.env.NATS_URL!, namespace);
    }, 60_000);

    it(
      'the gateway killed: every key answered with one resource and its original id',
      async () => {
        const batch = await underFault('gateway', async () => {
          await kill('gateway');
          gateway = await startGatewayProcess('gateway', backends, gatewayEnv(), procs);
          url = gateway.url;
        });
        const counts = summary('gateway killed', batch);
        expect(counts['project 0'] ?? 0, 'creates cut by the kill').toBeGreaterThan(0);
        expect(counts['scan 0'] ?? 0, 'scans cut by the kill').toBeGreaterThan(0);
        await expectEachKeyOnce(batch);
      },
      6 * slow,
    );

    it(
      'budgets and the scanner killed: every key answered with one resource and its original id',
      async () => {
        const batch = await underFault('services', async () => {
          await Promise.all([kill('budgets'), kill('scanner')]);
          await Promise.all([restart('budgets'), restart('scanner')]);
        });
        const counts = summary('services killed', batch);
        expect(counts['project 503'] ?? 0, 'creates that met budgets down').toBeGreaterThan(0);
        expect(counts['scan 503'] ?? 0, 'scans that met the scanner down').toBeGreaterThan(0);
        await expectEachKeyOnce(batch);
      },
      6 * slow,
    );

    it(
      'Redis killed: every key answered with one resource and its original id',
      async () => {
        const batch = await underFault('redis', async () => {
          await redis.kill();
          await new Promise((resolve) => setTimeout(resolve, 2_000));
          await redis.start();
        });
        summary('redis killed', batch);
        await expectEachKeyOnce(batch);
      },
      6 * slow,
    );

    it(
      'stored each keyed resource once and charged one credit per stored scan, none for a scan not stored',
      async () => {
        // Projects: one per key, the one whose id every answer carried.
        const projects = await db.query<{ id: string; name: string }>(
          'SELECT id, name FROM budgets.projects WHERE team_id = $1',
          [teamId],
        );
        const byName = new Map<string, string[]>();
        for (const row of projects.rows) byName.set(row.name, [...(byName.get(row.name) ?? []), row.id]);
        for (const one of all.filter((o) => o.kind === 'project')) {
          expect(byName.get(one.name), one.name).toEqual([one.answers.at(-1)!.id]);
        }
        // Scans: exactly the answered ones, one per key.
        const scans = await db.query<{ id: string }>('SELECT id FROM scanner.scans WHERE project_id = $1', [
          scannedProjectId,
        ]);
        const answered = all.filter((o) => o.kind === 'scan').map((o) => o.answers.at(-1)!.id);
        expect(scans.rows.map((r) => r.id).sort()).toEqual([...answered].sort());
        // Credits: once the charges' grace has passed, a debit stands only for a stored scan, once.
        const stored = new Set(scans.rows.map((r) => r.id));
        const settled = await eventually(
          async () => {
            const { rows } = await db.query<{ scan_id: string; credits: string; refunded: boolean }>(
              `SELECT scan_id, credits::text, refunded_at IS NOT NULL AS refunded
             FROM identity.scan_credit_debits WHERE team_id = $1`,
              [teamId],
            );
            const standing = rows.filter((r) => !r.refunded && !stored.has(r.scan_id));
            return standing.length === 0 ? rows : undefined;
          },
          30_000 + 4 * chargeGraceMs,
        );
        const failed = await db.query<{ id: string }>(
          `SELECT id FROM scanner.scans WHERE project_id = $1 AND status = 'failed'`,
          [scannedProjectId],
        );
        const failedIds = new Set(failed.rows.map((r) => r.id));
        for (const id of stored) {
          const debits = settled.filter((r) => r.scan_id === id);
          expect(debits, id).toHaveLength(1);
          // A scan that failed (a worker killed under it, past its takeover) is refunded, as any failed scan.
          if (!failedIds.has(id)) expect(debits[0]!.refunded, id).toBe(false);
        }
        const charged = settled.filter((r) => !r.refunded).reduce((sum, r) => sum + Number(r.credits), 0);
        const balance = Number((await identityClient.getTeam({ id: teamId })).scanCredits);
        expect(balance).toBe(initialCredits - charged);
        expect(charged).toBeLessThanOrEqual(stored.size);
        const { rows: charges } = await db.query('SELECT scan_id FROM scanner.scan_charges');
        expect(charges).toEqual([]);
      },
      2 * slow,
    );
  },
);
