import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { identity } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import {
  createGuardClient,
  GuardApiError,
  listAll,
  unwrap,
  type components,
  type GuardClient,
} from '@costgov/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteStreams,
  eventually,
  realInfra,
  startBackends,
  startGatewayProcess,
  uniqueName,
  type Backends,
  type Proc,
  createTestDatabase,
  type TestDatabase,
  killProcess,
  restartBackend,
} from '@costgov/testing';
import { focusFile as monthFile } from '@costgov/testing';

/** A FOCUS export of the current month, one row per cost, charged on the days so far. */
const focusFile = (costs: number[]) =>
  monthFile(costs, { service: 'Amazon Elastic Compute Cloud', chargeDay: 'spread' });

/*
 * From FOCUS files to a breached budget to a resolved violation, with identity, costs, budgets,
 * violations and the gateway each as its own process on real Postgres and NATS, driven through the
 * REST API only (the database and JetStream are read only to know that no event is still on its way).
 *
 * The next period is not covered here: the processes run on the real clock, which a test cannot move
 * across processes. services/budgets/test/evaluation.test.ts ('starts a new period clean when the
 * clock passes the boundary') covers it with a controlled clock.
 */

const apiKey = 'cg_live_e2ecostsbootstrapkey0000000000000';
const budgetAmount = 1000;
/** Month-to-date exports of one account, each restating the last: 51.25 %, 85.075 %, 101.025 % of 1000. */
const exports: number[][] = [
  [200.25, 180.5, 131.75],
  [200.25, 180.5, 131.75, 190, 148.25],
  [200.25, 180.5, 131.75, 190, 148.25, 99.5, 60],
];
/** Sums in cents, so the expected spend is exact whatever order the rows are added in. */
const sumOf = (costs: number[]) => costs.reduce((cents, cost) => cents + Math.round(cost * 100), 0) / 100;
const spends = exports.map(sumOf) as [number, number, number];
/** What each upload must leave open: [threshold %, severity, current_value] sorted by threshold. */
const expectedAfter: ReadonlyArray<ReadonlyArray<readonly [number, string, number]>> = [
  [[50, 'info', spends[0]]],
  [
    [50, 'info', spends[0]],
    [80, 'warning', spends[1]],
  ],
  [
    [50, 'info', spends[0]],
    [80, 'warning', spends[1]],
    [100, 'critical', spends[2]],
  ],
];
/** Startup of a process and redelivery after a kill (ack wait 30 s) on a loaded two-core machine. */
const slow = 120_000;

type Violation = components['schemas']['Violation'];

/** The data of an answer that has the expected status; otherwise the test fails showing the error body. */
async function expectStatus<O extends { data?: unknown; error?: unknown; response: Response }>(
  call: Promise<O>,
  status: number,
): Promise<NonNullable<O['data']>> {
  const { data, error, response } = await call;
  expect(response.status, JSON.stringify(error)).toBe(status);
  return data as NonNullable<O['data']>;
}

describe.runIf(realInfra)('end to end: FOCUS uploads breach a budget, every service its own process', () => {
  let database: TestDatabase;
  const namespace = uniqueName('e2ecosts');
  const procs: Proc[] = [];
  let backends: Backends;
  let url = '';
  /** The REST API through the typed client (@costgov/client), as the bootstrap key. */
  let api: GuardClient;
  let db: pg.Client;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  async function upload(connectionId: string, costs: number[]) {
    const summary = await expectStatus(
      api.POST('/v1/guard/connections/{id}/cost-data', {
        params: { path: { id: connectionId } },
        headers: { 'content-type': 'text/csv' },
        body: focusFile(costs),
      }),
      200,
    );
    expect(summary.data).toMatchObject({ connection_id: connectionId, rows: costs.length });
    expect(summary.data.totals).toHaveLength(1);
    expect(summary.data.totals[0]!.currency).toBe('USD');
    expect(summary.data.totals[0]!.effective_cost).toBeCloseTo(sumOf(costs), 6);
    return summary.data;
  }

  const budgetOf = async (id: string) =>
    (await api.GET('/v1/guard/budgets/{id}', { params: { path: { id } } })).data?.data;
  const projectOf = async (id: string) =>
    (await unwrap(api.GET('/v1/guard/projects/{id}', { params: { path: { id } } }))).data;
  const violationOf = async (id: string) =>
    (await unwrap(api.GET('/v1/guard/violations/{id}', { params: { path: { id } } }))).data;

  /** A connection, a project on it and a monthly budget of 1000 USD at 50, 80 and 100 %. */
  async function setUp(name: string): Promise<{ connectionId: string; projectId: string; budgetId: string }> {
    const connection = (
      await expectStatus(api.POST('/v1/guard/connections', { body: { name, provider: 'aws' } }), 201)
    ).data;
    const project = (
      await expectStatus(
        api.POST('/v1/guard/projects', { body: { name, connection_ids: [connection.id] } }),
        201,
      )
    ).data;
    const budget = (
      await expectStatus(
        api.POST('/v1/guard/budgets', {
          body: {
            project_id: project.id,
            name: `${name} monthly`,
            amount: budgetAmount,
            currency: 'USD',
            period: 'monthly',
            thresholds: [50, 80, 100],
          },
        }),
        201,
      )
    ).data;
    expect(budget).toMatchObject({ current_spend: 0, status: 'active' });
    return { connectionId: connection.id, projectId: project.id, budgetId: budget.id };
  }

  /** Every violation of the budget, every page of the list, by threshold. */
  const violationsOf = async (budgetId: string): Promise<Violation[]> => {
    const violations: Violation[] = [];
    const query = { budget_id: budgetId, sort: 'threshold_value' } as const;
    for await (const violation of listAll(api, '/v1/guard/violations', { query })) violations.push(violation);
    return violations;
  };
  const shape = (violations: Violation[]) =>
    violations.map((v) => [v.threshold_percentage, v.severity, v.current_value] as const);
  const sameShape = (actual: Violation[], expected: ReadonlyArray<readonly [number, string, number]>) =>
    actual.length === expected.length &&
    actual.every(
      (v, i) =>
        v.threshold_percentage === expected[i]![0] &&
        v.severity === expected[i]![1] &&
        Math.abs(v.current_value - expected[i]![2]) < 1e-6,
    );

  /**
   * Waits until nothing is on its way: every outbox published, every durable consumer of the namespace
   * with nothing pending or unacknowledged, and that twice a second apart with no new message in between.
   */
  async function quiet(): Promise<void> {
    const { rows: schemas } = await db.query<{ schema: string }>(
      `SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'outbox'`,
    );
    const snapshot = async () => {
      let unpublished = 0;
      for (const { schema } of schemas) {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${schema}.outbox WHERE published_at IS NULL`,
        );
        unpublished += rows[0]!.n;
      }
      const streams: string[] = [];
      let busy = unpublished;
      for await (const stream of jsm.streams.list()) {
        if (!stream.config.name.startsWith(`${namespace.toUpperCase()}_`)) continue;
        streams.push(`${stream.config.name}:${stream.state.last_seq}`);
        for await (const consumer of jsm.consumers.list(stream.config.name)) {
          busy += consumer.num_pending + consumer.num_ack_pending;
        }
      }
      // No stream at all would mean the namespace is wrong and this wait proves nothing.
      expect(streams.length).toBeGreaterThan(0);
      return busy === 0 ? streams.sort().join(',') : undefined;
    };
    await eventually(async () => {
      const first = await snapshot();
      if (first === undefined) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return (await snapshot()) === first ? true : undefined;
    }, slow);
  }

  /** After an upload: the budget's spend is the file's sum and exactly the expected violations are open. */
  async function expectCrossings(
    ids: { projectId: string; budgetId: string },
    step: number,
  ): Promise<Violation[]> {
    const budget = await eventually(async () => {
      const read = await budgetOf(ids.budgetId);
      return read && Math.abs(read.current_spend - spends[step]!) < 1e-6 ? read : undefined;
    }, slow);
    const expected = expectedAfter[step]!;
    await eventually(async () => {
      // Polling a slow machine can spend the key's bucket: a 429 is a "not yet", after its Retry-After.
      const violations = await violationsOf(ids.budgetId).catch(async (error: unknown) => {
        if (!(error instanceof GuardApiError) || error.status !== 429) throw error;
        await new Promise((resolve) => setTimeout(resolve, (error.retryAfterSeconds ?? 1) * 1000));
        return undefined;
      });
      return violations && sameShape(violations, expected) ? true : undefined;
    }, slow);
    // Nothing more is coming: a duplicate would show now.
    await quiet();
    const violations = await violationsOf(ids.budgetId);
    expect(shape(violations)).toEqual(
      expected.map(([threshold, severity, value]) => [threshold, severity, expect.closeTo(value, 6)]),
    );
    for (const violation of violations) {
      expect(violation).toMatchObject({ project_id: ids.projectId, budget_id: ids.budgetId, status: 'open' });
    }
    const read = (await budgetOf(ids.budgetId))!;
    expect(read.current_spend).toBeCloseTo(spends[step]!, 6);
    expect(read.percentage_used).toBeCloseTo((spends[step]! / budgetAmount) * 100, 2);
    expect(read.status).toBe(step === 2 ? 'breached' : 'active');
    expect(read.thresholds.map((t) => t.notified_at !== null)).toEqual([true, step >= 1, step >= 2]);
    expect(budget.id).toBe(ids.budgetId);
    const project = await projectOf(ids.projectId);
    expect(project.violation_count).toBe(expected.length);
    return violations;
  }

  const kill = (name: string) => killProcess(procs, name);
  const restart = async (name: 'violations' | 'budgets') =>
    void (await restartBackend(name, backends, procs, url, { timeoutMs: slow }));

  beforeAll(async () => {
    database = await createTestDatabase('e2e_costs');
    backends = await startBackends(
      {
        DATABASE_URL: database.url,
        NATS_URL: process.env.NATS_URL,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: apiKey,
      },
      procs,
    );
    url = (await startGatewayProcess('gateway', backends, {}, procs)).url;
    // The test polls reads every 25 ms: past the default 120 requests a minute, uploads would meet 429.
    const identityClient = createRpcClient(identity.IdentityService, backends.identity);
    try {
      const teamId = (await identityClient.listTeams({})).teams.find((t) => t.name === 'default')!.id;
      await identityClient.setTeamLimits({
        teamId,
        apiRequestsPerMinute: 1_000_000,
        apiConcurrentRequests: 100,
      });
    } finally {
      identityClient.close();
    }
    api = createGuardClient({ baseUrl: url, apiKey });
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
    nc = await connect({ servers: process.env.NATS_URL });
    jsm = await jetstreamManager(nc);
  }, 2 * slow);

  afterAll(async () => {
    await nc?.close();
    await db?.end();
    await Promise.all(procs.map((p) => p.stop()));
    await database?.drop();
    await deleteStreams(process.env.NATS_URL!, namespace);
  }, 60_000);

  it(
    'scans the breached project through REST: findings listed and suppressed, the posture follows',
    async () => {
      const ids = await setUp('scanned');
      await upload(ids.connectionId, exports[2]!); // 1010.25 of 1000 USD: breached
      await eventually(
        async () => ((await budgetOf(ids.budgetId))?.status === 'breached' ? true : undefined),
        slow,
      );
      // Scan credits are an operator's grant (gRPC to identity); everything else goes through REST.
      const identityClient = createRpcClient(identity.IdentityService, backends.identity);
      try {
        const teamId = (await identityClient.listTeams({})).teams[0]!.id;
        await identityClient.grantScanCredits({ teamId, credits: 5n });
      } finally {
        identityClient.close();
      }

      // With an Idempotency-Key, the retry of a scan request that timed out starts (and pays) nothing.
      const startScan = () =>
        api.POST('/v1/guard/scans', {
          params: { header: { 'Idempotency-Key': `scan-${ids.projectId}` } },
          body: { project_id: ids.projectId },
        });
      const created = (await expectStatus(startScan(), 202)).data;
      expect(created).toMatchObject({ status: 'pending', credits_used: 1 });
      const retried = await startScan();
      expect(retried.response.headers.get('idempotent-replayed')).toBe('true');
      expect(retried.data?.data.id).toBe(created.id);
      const scan = await eventually(async () => {
        const read = await unwrap(api.GET('/v1/guard/scans/{id}', { params: { path: { id: created.id } } }));
        return read.data.status === 'completed' ? read.data : undefined;
      }, slow);
      // The file's rows carry no tags at all: all of the connection's spend is unallocated.
      const findings = [];
      for await (const finding of listAll(api, '/v1/guard/findings', { query: { scan_id: scan.id } }))
        findings.push(finding);
      expect(findings).toHaveLength(scan.findings_count);
      expect(findings).toContainEqual(
        expect.objectContaining({
          rule_id: 'spend-unallocated-share',
          project_id: ids.projectId,
          status: 'open',
        }),
      );

      for (const finding of findings) {
        await expectStatus(
          api.PATCH('/v1/guard/findings/{id}', {
            params: { path: { id: finding.id } },
            body: { status: 'suppressed', reason: 'Tagging lands with the next release.' },
          }),
          200,
        );
      }
      // Budget compliance 0 of 40 (its one budget is breached), tag coverage left out (the team requires
      // no tag), adoption 30 of 30 (every finding of the scan suppressed): 30 of 70, 42.9 %, grade F.
      const posture = await expectStatus(
        api.GET('/v1/guard/cost-posture', { params: { query: { project_id: ids.projectId } } }),
        200,
      );
      expect(posture.data).toMatchObject({
        score: 0 + 30,
        max_score: 40 + 30,
        grade: 'F',
        breakdown: { budget_compliance: 0, tag_coverage: null, recommendation_adoption: 30 },
      });
    },
    10 * slow,
  );

  it(
    'crosses 50, 80 and 100 % as files arrive: one violation each, breached, acknowledged, resolved',
    async () => {
      const ids = await setUp('storefront');

      await upload(ids.connectionId, exports[0]!);
      await expectCrossings(ids, 0);
      await upload(ids.connectionId, exports[1]!);
      await expectCrossings(ids, 1);
      const third = await upload(ids.connectionId, exports[2]!);
      expect(third.rows_replaced).toBe(exports[1]!.length);
      const [info, warning, critical] = await expectCrossings(ids, 2);

      // The same file again replaces the period with itself: same spend, no new violation.
      const again = await upload(ids.connectionId, exports[2]!);
      expect(again.rows_replaced).toBe(exports[2]!.length);
      await expectCrossings(ids, 2);

      const byWarningId = { params: { path: { id: warning!.id } } };
      const acknowledged = await expectStatus(
        api.POST('/v1/guard/violations/{id}/acknowledge', {
          ...byWarningId,
          body: { note: 'Traffic spike from the sale; scaling down tonight.' },
        }),
        200,
      );
      expect(acknowledged.data).toMatchObject({
        id: warning!.id,
        status: 'acknowledged',
        acknowledgement_note: 'Traffic spike from the sale; scaling down tonight.',
        acknowledged_at: expect.stringMatching(/Z$/),
      });
      const twice = await api.POST('/v1/guard/violations/{id}/acknowledge', {
        ...byWarningId,
        body: { note: 'again' },
      });
      expect(twice.response.status).toBe(409);
      expect(twice.error?.error.code).toBe('conflict');
      // Acknowledged violations still count.
      await quiet();
      expect((await projectOf(ids.projectId)).violation_count).toBe(3);

      const resolved = await expectStatus(
        api.POST('/v1/guard/violations/{id}/resolve', { ...byWarningId, body: { note: 'Scaled down.' } }),
        200,
      );
      expect(resolved.data).toMatchObject({
        status: 'resolved',
        resolution_note: 'Scaled down.',
        resolved_at: expect.stringMatching(/Z$/),
      });
      expect((await violationOf(warning!.id)).status).toBe('resolved');
      expect((await violationOf(critical!.id)).status).toBe('open');
      expect((await violationOf(info!.id)).status).toBe('open');
      await eventually(
        async () => ((await projectOf(ids.projectId)).violation_count === 2 ? true : undefined),
        slow,
      );
      const resolvedOnes = await unwrap(
        api.GET('/v1/guard/violations', {
          params: { query: { budget_id: ids.budgetId, status: 'resolved' } },
        }),
      );
      expect(resolvedOnes.data.map((v) => v.id)).toEqual([warning!.id]);
    },
    10 * slow,
  );

  it(
    'opens each violation exactly once when violations, then budgets, are killed -9 between uploads',
    async () => {
      const ids = await setUp('checkout');

      await upload(ids.connectionId, exports[0]!);
      // The threshold event is written: kill violations while it may still be on its way to it.
      await eventually(
        async () => ((await budgetOf(ids.budgetId))?.thresholds[0]?.notified_at ? true : undefined),
        slow,
      );
      await kill('violations');
      await upload(ids.connectionId, exports[1]!);
      // Budgets evaluates the upload while violations is down; its event waits in JetStream.
      await eventually(
        async () => ((await budgetOf(ids.budgetId))?.thresholds[1]?.notified_at ? true : undefined),
        slow,
      );
      const down = await api.GET('/v1/guard/violations');
      expect(down.response.status).toBe(503);
      expect(down.error?.error.code).toBe('service_unavailable');
      await restart('violations');
      await expectCrossings(ids, 1);

      await kill('budgets');
      await upload(ids.connectionId, exports[2]!);
      await restart('budgets');
      await expectCrossings(ids, 2);

      // Every message of the flow delivered once more, past the publish dedupe (a new Nats-Msg-Id), as a
      // redelivery after a lost ack would: the upload's event and each threshold event change nothing.
      for (const [stream, type, about, count] of [
        ['costs', 'costs.data.ingested', ids.connectionId, exports.length],
        ['budgets', 'budgets.budget.threshold_crossed', ids.budgetId, 3],
        ['budgets', 'budgets.budget.breached', ids.budgetId, 1],
      ] as const) {
        const subject = `${namespace}.${type}`;
        const name = `${namespace}_${stream}`.toUpperCase();
        const { state } = await jsm.streams.info(name);
        let copies = 0;
        for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
          const stored = await jsm.streams.getMessage(name, { seq }).catch(() => null);
          if (stored?.subject !== subject || stored.header.get('ce-subject') !== about) continue;
          const again = natsHeaders();
          for (const [key, values] of stored.header) for (const value of values) again.append(key, value);
          again.set('Nats-Msg-Id', `${stored.header.get('ce-id')}-again`);
          await jetstream(nc).publish(subject, stored.data, { headers: again });
          copies++;
        }
        expect(copies, type).toBe(count);
      }
      await expectCrossings(ids, 2);

      // The restarted processes still take part: a resolve reaches the count budgets keeps.
      const [info] = await violationsOf(ids.budgetId);
      await expectStatus(
        api.POST('/v1/guard/violations/{id}/resolve', { params: { path: { id: info!.id } } }),
        200,
      );
      await eventually(
        async () => ((await projectOf(ids.projectId)).violation_count === 2 ? true : undefined),
        slow,
      );
    },
    10 * slow,
  );
});
