/**
 * `npm run bench`, on one fresh Postgres database, every service its own process:
 * 1. GET /v1/guard/projects/:id through the gateway and gRPC against a single-process express + pg handler;
 * 2. the same GET on a gateway limiting on Redis and on one with RATE_LIMIT=off (what limiting costs);
 * 3. the Redis limiter's own acquire latency, called from this process;
 * 4. SCIM `userName eq`, `co` and list pages on a team of 100,000 users, through the gateway;
 * 5. costs: the upload rate of a 1,000,000-row FOCUS file with the memory of the gateway and costs, budget
 *    evaluation over 10,000,000 cost records, and the time from an upload to its violation (NATS);
 * 6. scanner: one scan over a 1,000,000-row FOCUS upload, 100 small scans with one and two worker processes,
 *    and the cost-posture read p99 at 20 connections (NATS).
 * 7. large-tenant (not in the default set: about half an hour): a month of 10,000,000 FOCUS rows over 100,000
 *    resources through REST, its restatement, one scan with 1, 2 and 4 quarter-core workers, budget
 *    evaluation (NATS; see ./large-tenant.ts).
 * BENCH_SECTIONS (comma-separated: projects, ratelimit, limiter, scim, costs, scanner, large-tenant) runs
 * only those.
 * Progress goes to stderr; a table per section and one `BENCH_RESULT {...}` line to stdout.
 */
import os from 'node:os';
import { inspect, isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { identity } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import { createRpcClient } from '@costgov/rpc';
import { uniqueName } from '@costgov/testing';
import { benchProbe, measure, positiveInt, processProbe, progress, type CpuProbe } from './load';
import { startBaseline, startFullPath, startGateway, type Gateway, type Proc } from './processes';
import { costsSection } from './costs';
import { checkRedis, gatewayRedisTimeoutMs, limiterLatency, rateLimitCost, redisPid } from './ratelimit';
import {
  printCosts,
  printLimiter,
  printProjects,
  printRateLimit,
  printResult,
  printScim,
  summarize,
  type BenchResult,
  type CostsResult,
  type LimiterResult,
  type RateLimitResult,
  type ScimResult,
} from './report';
import { printScanner, type ScannerResult } from './scanner-report';
import { scimSection } from './scim';
import { natsReachable, scannerSection } from './scanner';
import { largeTenantSection } from './large-tenant';
import { printLargeTenant, type LargeTenantResult } from './large-tenant-report';

const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const durationSeconds = positiveInt('BENCH_DURATION', 10);
const connections = positiveInt('BENCH_CONNECTIONS', 32);
const warmUpSeconds = positiveInt('BENCH_WARMUP', 3);
const scimUsers = positiveInt('BENCH_SCIM_USERS', 100_000);
const ingestRows = positiveInt('BENCH_INGEST_ROWS', 1_000_000);
const evalRows = positiveInt('BENCH_EVAL_ROWS', 10_000_000);
const violationRuns = positiveInt('BENCH_VIOLATION_RUNS', 50);
const scanRows = positiveInt('BENCH_SCAN_ROWS', 1_000_000);
const smallScans = positiveInt('BENCH_SMALL_SCANS', 100);
const largeRows = positiveInt('BENCH_LARGE_ROWS', 10_000_000);
const largeResources = positiveInt('BENCH_LARGE_RESOURCES', 100_000);
const largeWorkers = (process.env.BENCH_LARGE_WORKERS ?? '1,2,4').split(',').map(Number);
if (!largeWorkers.every((count) => Number.isInteger(count) && count > 0))
  throw new Error(
    `BENCH_LARGE_WORKERS must be worker counts, e.g. 1,2,4, not '${process.env.BENCH_LARGE_WORKERS}'`,
  );
const largeWorkerQuotaUs = positiveInt('BENCH_LARGE_WORKER_QUOTA_US', 25_000);
const largeParts = process.env.BENCH_LARGE_PARTS ?? 'all';
/** Leaves the bench database in place at the end (to look into its plans); dropped by default. */
const keepDatabase = process.env.BENCH_KEEP_DATABASE === '1';
if (largeParts !== 'all' && largeParts !== 'ingest')
  throw new Error(`BENCH_LARGE_PARTS must be all or ingest, not '${largeParts}'`);
const settings = { durationSeconds, warmUpSeconds };
const seededProjects = 1_000;
/** The bootstrap key of team `default`: the prefix and 40 base62 characters. */
const apiKey = `cg_live_${'bench'.padEnd(40, '0')}`;
const auth = { authorization: `Bearer ${apiKey}` };
/** Team limits no run comes near: a burst of 10,000,000 requests, then 166,667 a second; 1,000 in flight. */
const raisedLimits: RateLimitResult['limits'] = { requestsPerMinute: 10_000_000, concurrentRequests: 1_000 };
/** A Redis timeout no answer misses, so that every decision of the gateway that has it comes from Redis. */
const redisOnlyTimeoutMs = 1_000;
/** Acquisitions of the limiter latency runs, and how many are in flight in the concurrent one. */
const limiterAcquisitions = 5_000;
const limiterInFlight = 50;
/** BENCH_SECTIONS (e.g. `projects`) runs only the sections named; all but large-tenant by default. */
const sectionNames = [
  'projects',
  'ratelimit',
  'limiter',
  'scim',
  'costs',
  'scanner',
  'large-tenant',
] as const;
type Section = (typeof sectionNames)[number];
const defaultSections = sectionNames.filter((name) => name !== 'large-tenant');
const sections = new Set(
  (process.env.BENCH_SECTIONS ?? defaultSections.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
for (const name of sections)
  if (!(sectionNames as readonly string[]).includes(name))
    throw new Error(`BENCH_SECTIONS: unknown section '${name}' (known: ${sectionNames.join(', ')})`);
const runs = (section: Section) => sections.has(section);

async function withClient<T>(connectionString: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/**
 * One project through the REST API (the measured one, with three budgets added in SQL), then
 * `seededProjects` more with a budget each in one bulk insert, so the tables are not trivially small.
 */
async function seed(gatewayUrl: string, databaseUrl: string): Promise<{ projectId: string; teamId: string }> {
  const created = await fetch(`${gatewayUrl}/v1/guard/projects`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', connection_ids: [] }),
  });
  if (created.status !== 201)
    throw new Error(`POST /v1/guard/projects answered ${created.status}: ${await created.text()}`);
  const projectId = ((await created.json()) as { data: { id: string } }).data.id;

  return withClient(databaseUrl, async (db) => {
    const { rows } = await db.query<{ team_id: string }>(
      'SELECT team_id FROM budgets.projects WHERE id = $1',
      [projectId],
    );
    const teamId = rows[0]!.team_id;
    const projectIds = Array.from({ length: seededProjects }, () => newId('project'));
    await db.query(
      `INSERT INTO budgets.projects (id, team_id, name)
       SELECT id, $2, 'seeded-' || n FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`,
      [projectIds, teamId],
    );
    const budgets = [
      [projectId, 'compute', 5000, 'USD', 'monthly', 'active', 1234.5],
      [projectId, 'storage', 1200, 'USD', 'quarterly', 'breached', 1300],
      [projectId, 'legacy', 100, 'EUR', 'yearly', 'archived', 0],
      ...projectIds.map((id) => [id, 'monthly', 1000, 'USD', 'monthly', 'active', 10]),
    ];
    const column = (i: number) => budgets.map((b) => b[i]);
    await db.query(
      // percentage_used as budgets' evaluation stores it beside the spend.
      `INSERT INTO budgets.budgets (id, team_id, project_id, name, amount, currency, period, status, current_spend, percentage_used)
       SELECT *, CASE WHEN amount > 0 THEN round(spend / amount * 100, 2) ELSE 0 END
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::numeric[], $6::text[], $7::text[], $8::text[], $9::numeric[])
         AS t(id, team_id, project_id, name, amount, currency, period, status, spend)`,
      [budgets.map(() => newId('budget')), budgets.map(() => teamId), ...[0, 1, 2, 3, 4, 5, 6].map(column)],
    );
    await db.query('ANALYZE budgets.projects, budgets.budgets');
    return { projectId, teamId };
  });
}

/** Both targets must answer the measured request with the same body, or the comparison means nothing. */
async function checkSameAnswer(urls: Record<'baseline' | 'fullPath', string>, path: string): Promise<void> {
  const [baseline, fullPath] = await Promise.all(
    [urls.baseline, urls.fullPath].map(async (url) => {
      const response = await fetch(`${url}${path}`, { headers: auth });
      if (response.status !== 200)
        throw new Error(`GET ${url}${path} answered ${response.status}: ${await response.text()}`);
      return response.json();
    }),
  );
  if (!isDeepStrictEqual(baseline, fullPath)) {
    throw new Error(
      `the targets answer differently:\nbaseline:  ${JSON.stringify(baseline)}\nfull path: ${JSON.stringify(fullPath)}`,
    );
  }
}

const target = (name: string, url: string) => ({ name, url, headers: auth, connections });

/** budgets_project_reads_total of the budgets process by result (hit, miss, bypass), from its /metrics. */
async function projectReads(metricsUrl: string): Promise<Record<'hit' | 'miss' | 'bypass', number>> {
  const text = await (await fetch(metricsUrl)).text();
  const count = (result: string) =>
    Number(
      new RegExp(`^budgets_project_reads_total\\{result="${result}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0,
    );
  return { hit: count('hit'), miss: count('miss'), bypass: count('bypass') };
}

/** The Postgres backends serving the bench database, when Postgres runs on this machine. */
async function postgresPids(database: string): Promise<number[]> {
  return withClient(serverUrl, async (admin) => {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [database],
    );
    return rows.map((r) => r.pid);
  });
}

async function main(): Promise<void> {
  const database = uniqueName('bench');
  const databaseUrl = Object.assign(new URL(serverUrl), { pathname: `/${database}` }).toString();
  const procs: Proc[] = [];
  const closers: Array<() => void> = [];
  let cleaning: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      closers.forEach((close) => close());
      progress(`stopping ${procs.length} processes, dropping database ${database}`);
      await Promise.all(procs.map((p) => p.stop()));
      if (keepDatabase) {
        progress(`keeping database ${database} (BENCH_KEEP_DATABASE): drop it when done`);
        return;
      }
      try {
        await withClient(serverUrl, (admin) =>
          admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`),
        );
      } catch (error) {
        progress(`could not drop database ${database}: ${String(error)}`);
        process.exitCode = 1;
      }
    })());
  // Ctrl-C reaches this process more than once: from the terminal, and relayed by npm and tsx. A signal
  // without a listener would end it (tsx's preflight exits) before the database is dropped, so the
  // listener stays and later signals wait for the same cleanup.
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = true;
      progress(`${signal}: cleaning up`);
      void cleanUp().finally(() => process.exit(130));
    });
  }

  let failed = true;
  try {
    // The rate limiting, limiter and SCIM sections run on Redis.
    if (runs('ratelimit') || runs('limiter') || runs('scim')) {
      progress(`checking Redis at BENCH_REDIS_URL`);
      await checkRedis(redisUrl);
    }
    // The scanner section needs NATS (its workers take scans from JetStream): NATS_URL, else BENCH_NATS_URL.
    let scannerSkipped: string | undefined;
    if (runs('scanner') || runs('large-tenant')) {
      const natsUrl = process.env.NATS_URL ?? process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
      if (await natsReachable(natsUrl)) process.env.NATS_URL = natsUrl;
      else {
        scannerSkipped = `NATS is not reachable at ${natsUrl} (set NATS_URL or BENCH_NATS_URL): worker processes share scans through JetStream`;
        progress(`scanner section skipped: ${scannerSkipped}`);
      }
    }
    progress(`creating database ${database}`);
    await withClient(serverUrl, (admin) => admin.query(`CREATE DATABASE ${database}`));
    progress(
      `starting identity, costs, budgets, violations and gateway${process.env.NATS_URL ? ' (NATS)' : ' (in-process bus)'}`,
    );
    const { gateway, backends } = await startFullPath(
      {
        databaseUrl,
        namespace: uniqueName('bench'),
        apiKey,
        // With the scanner section, the scanner process serves the API only: the section starts its workers.
        extra: (runs('scanner') || runs('large-tenant')) && !scannerSkipped ? { SCANNER_MODE: 'api' } : {},
      },
      procs,
    );
    progress(`seeding 1 project over REST and ${seededProjects} in SQL`);
    const { projectId, teamId } = await seed(gateway.url, databaseUrl);
    const path = `/v1/guard/projects/${projectId}`;
    const pidOf = (name: string) => procs.find((p) => p.name === name)?.child.pid;
    const redis = runs('ratelimit') || runs('scim') ? await redisPid(redisUrl) : undefined;
    const cpu = (measured: Gateway) => async (): Promise<CpuProbe[]> => [
      processProbe(measured.name, [measured.proc.child.pid!]),
      processProbe('identity', [pidOf('identity')!]),
      processProbe('budgets', [pidOf('budgets')!]),
      processProbe('postgres', await postgresPids(database)),
      ...(redis ? [processProbe('redis', [redis])] : []),
      benchProbe,
    ];

    let projects: BenchResult | undefined;
    if (runs('projects')) {
      progress('starting baseline');
      const baselineUrl = await startBaseline({ databaseUrl, apiKey, teamId }, procs);
      await checkSameAnswer({ baseline: baselineUrl, fullPath: gateway.url }, path);
      const baselineCpu = async (): Promise<CpuProbe[]> => [
        processProbe('baseline', [pidOf('baseline')!]),
        processProbe('postgres', await postgresPids(database)),
        benchProbe,
      ];
      const baseline1 = await measure(target('baseline', `${baselineUrl}${path}`), settings, {
        cpu: baselineCpu,
      });
      const budgetsMetrics = backends.metricsUrls.budgets!;
      const readsBefore = await projectReads(budgetsMetrics);
      const fullPath = await measure(target('full path', `${gateway.url}${path}`), settings, {
        cpu: cpu(gateway),
      });
      const readsAfter = await projectReads(budgetsMetrics);
      const baseline2 = await measure(target('baseline again', `${baselineUrl}${path}`), settings, {
        cpu: baselineCpu,
      });
      projects = summarize(
        {
          baseline1,
          fullPath,
          baseline2,
          projectReads: {
            cache: process.env.BUDGETS_PROJECT_CACHE ?? 'on',
            hit: readsAfter.hit - readsBefore.hit,
            miss: readsAfter.miss - readsBefore.miss,
            bypass: readsAfter.bypass - readsBefore.bypass,
          },
        },
        { durationSeconds, warmUpSeconds, connections, cpus: os.availableParallelism() },
      );
      printProjects(projects);
    }

    let rateLimit: RateLimitResult | undefined;
    let limiter: LimiterResult | undefined;
    let scim: ScimResult | undefined;
    if (runs('ratelimit') || runs('scim')) {
      // Rate limiting: two more gateways on the same backends, limiting on Redis, and a fresh API key whose
      // team limits are raised first, so that nothing is refused and no other key's bucket is touched.
      const identityClient = createRpcClient(identity.IdentityService, backends.identity);
      closers.push(() => identityClient.close());
      progress(
        `raising the team's API and SCIM limits to ${raisedLimits.requestsPerMinute}/min, ${raisedLimits.concurrentRequests} in flight`,
      );
      const team = await identityClient.setTeamLimits({
        teamId,
        apiRequestsPerMinute: raisedLimits.requestsPerMinute,
        apiConcurrentRequests: raisedLimits.concurrentRequests,
        scimRequestsPerMinute: raisedLimits.requestsPerMinute,
        scimConcurrentRequests: raisedLimits.concurrentRequests,
      });
      // An unknown field of the request would be dropped silently: the team's answer must show the limits.
      for (const limits of [team.apiLimits, team.scimLimits]) {
        const set = {
          requestsPerMinute: limits?.requestsPerMinute,
          concurrentRequests: limits?.concurrentRequests,
        };
        if (!isDeepStrictEqual(set, raisedLimits))
          throw new Error(
            `SetTeamLimits left the team at ${JSON.stringify(set)}, not ${JSON.stringify(raisedLimits)}`,
          );
      }
      const { secret: limitedKey } = await identityClient.createApiKey(
        { name: `bench rate limiting ${database}`, scopes: ['guard:read'] },
        { teamId },
      );
      const redisTimeoutMs = Number(process.env.RATE_LIMIT_REDIS_TIMEOUT_MS ?? gatewayRedisTimeoutMs);
      progress(
        `starting two gateways with RATE_LIMIT=on on Redis: RATE_LIMIT_REDIS_TIMEOUT_MS ${redisTimeoutMs} and ${redisOnlyTimeoutMs}`,
      );
      const [limited, redisOnly] = await Promise.all([
        startGateway('gateway-limited', backends, { RATE_LIMIT: 'on', REDIS_URL: redisUrl }, procs),
        startGateway(
          'gateway-redis-only',
          backends,
          { RATE_LIMIT: 'on', REDIS_URL: redisUrl, RATE_LIMIT_REDIS_TIMEOUT_MS: `${redisOnlyTimeoutMs}` },
          procs,
        ),
      ]);
      if (runs('ratelimit')) {
        rateLimit = await rateLimitCost({
          path,
          apiKey: limitedKey,
          off: gateway,
          on: limited,
          onRedisOnly: redisOnly,
          redisTimeoutMs,
          redisOnlyTimeoutMs,
          connections,
          settings,
          limits: raisedLimits,
          cpu: (measured) => cpu(measured)(),
        });
        printRateLimit(rateLimit);
      }
      if (runs('scim')) {
        const { secret: scimToken } = await identityClient.createScimToken(
          { name: `bench ${database}` },
          { teamId },
        );
        scim = await scimSection({
          databaseUrl,
          teamId,
          users: scimUsers,
          token: scimToken,
          gateway: limited,
          settings,
          cpu: cpu(limited),
        });
        printScim(scim);
      }
    }
    if (runs('limiter')) {
      limiter = await limiterLatency({
        redisUrl,
        acquisitions: limiterAcquisitions,
        inFlight: limiterInFlight,
      });
      printLimiter(limiter);
    }
    let costs: CostsResult | undefined;
    if (runs('costs')) {
      costs = await costsSection({
        gateway,
        backends,
        costsPid: pidOf('costs')!,
        databaseUrl,
        teamId,
        apiKey,
        ingestRows,
        evalRows,
        violationRuns,
        nats: Boolean(process.env.NATS_URL),
      })();
      printCosts(costs);
    }
    let scanner: ScannerResult | { skipped: string } | undefined;
    if (runs('scanner')) {
      scanner = scannerSkipped
        ? { skipped: scannerSkipped }
        : await scannerSection({
            gateway,
            backends,
            databaseUrl,
            teamId,
            apiKey,
            scanRows,
            smallScans,
            load: settings,
            procs,
          })();
      printScanner(scanner);
    }
    let largeTenant: LargeTenantResult | { skipped: string } | undefined;
    if (runs('large-tenant')) {
      largeTenant = scannerSkipped
        ? { skipped: scannerSkipped }
        : await largeTenantSection({
            backends,
            costsPid: pidOf('costs')!,
            databaseUrl,
            teamId,
            apiKey,
            rows: largeRows,
            resources: largeResources,
            workerCounts: largeWorkers,
            workerQuotaUs: largeWorkerQuotaUs,
            procs,
            ingestOnly: largeParts === 'ingest',
          })();
      printLargeTenant(largeTenant);
    }
    printResult({ ...projects, rateLimit, limiter, scim, costs, scanner, largeTenant });
    failed = false;
  } finally {
    // What the processes logged (warnings and errors) usually says why a run failed.
    if (failed && !interrupted) {
      for (const proc of procs) {
        const output = proc.output().trim();
        if (output) progress(`--- ${proc.name} (last lines)\n${output.split('\n').slice(-20).join('\n')}`);
      }
    }
    await cleanUp();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    // inspect shows the stack and the cause (e.g. the gRPC status behind a DomainError).
    console.error(`[bench] failed: ${inspect(error, { depth: 4 })}`);
    process.exit(1);
  },
);
