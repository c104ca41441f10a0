import type autocannon from 'autocannon';
import type { ScannerResult } from './scanner-report';
import type { LargeTenantResult } from './large-tenant-report';

export interface Figures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
}

/** CPU a process used during a measured run, in % of one core (200 % is both cores of a 2-core machine). */
export interface CpuShare {
  name: string;
  percent: number;
}

/** What the gateway under load reported about the run. */
export interface GatewayFigures {
  /** Requests the gateway finished during the run, by its own count. */
  requests: number;
  /** Rate limit decisions taken per process because Redis did not answer within the timeout. */
  fallbackDecisions: number;
  /** How late the gateway's event loop ran timers (prom-client's nodejs_eventloop_lag_*). */
  eventLoopLagP99Ms: number;
  eventLoopLagMaxMs: number;
}

export type RunFigures = Figures & { cpu?: CpuShare[]; gateway?: GatewayFigures };

export type Verdict = 'PASS' | 'BELOW';

export interface BenchResult {
  date: string;
  durationSeconds: number;
  warmUpSeconds: number;
  connections: number;
  cpus: number;
  baseline: Figures;
  baselineRuns: [RunFigures, RunFigures];
  fullPath: RunFigures;
  /** How budgets answered the full path's project reads (its budgets_project_reads_total over the run). */
  projectReads: ProjectReads;
  ratio: number;
  target: number;
  verdict: Verdict;
  /** The gateway's CPU per request during the full path (undefined when its CPU could not be read). */
  gatewayCpu: CpuTarget | undefined;
}

/**
 * The gateway's CPU per request against its target, and against the baseline's whole work (its process
 * and Postgres, mean of its two runs): CPU times differ by machine, that ratio much less.
 */
export interface CpuTarget {
  msPerRequest: number;
  targetMs: number;
  verdict: Verdict;
  baselineMsPerRequest: number | undefined;
}

/** BUDGETS_PROJECT_CACHE of the budgets process, and its project reads by where they were answered. */
export interface ProjectReads {
  cache: string;
  hit: number;
  miss: number;
  bypass: number;
}

/** Target: the full path serves at least this share of the baseline's throughput. */
export const target = 0.5;

/**
 * Target: the gateway spends less than this much CPU per request of the full path. Set (issue 7) on a
 * machine where the baseline's whole work took 0.57 ms per request: 0.61 of it.
 */
export const gatewayCpuTargetMs = 0.35;

export const figuresOf = (result: autocannon.Result): Figures => ({
  requestsPerSecond: result.requests.average,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  requests: result.requests.total,
});

const mean = (a: number, b: number) => (a + b) / 2;

export function summarize(
  runs: { baseline1: RunFigures; fullPath: RunFigures; baseline2: RunFigures; projectReads: ProjectReads },
  settings: { durationSeconds: number; warmUpSeconds: number; connections: number; cpus: number },
): BenchResult {
  const { baseline1, fullPath, baseline2, projectReads } = runs;
  const baseline: Figures = {
    requestsPerSecond: mean(baseline1.requestsPerSecond, baseline2.requestsPerSecond),
    p50Ms: mean(baseline1.p50Ms, baseline2.p50Ms),
    p99Ms: mean(baseline1.p99Ms, baseline2.p99Ms),
    requests: baseline1.requests + baseline2.requests,
  };
  const ratio = fullPath.requestsPerSecond / baseline.requestsPerSecond;
  const gatewayMs = cpuMsPerRequest(fullPath, ['gateway']);
  const baselineMs = [baseline1, baseline2].map((run) => cpuMsPerRequest(run, ['baseline', 'postgres']));
  return {
    date: new Date().toISOString(),
    ...settings,
    baseline,
    baselineRuns: [baseline1, baseline2],
    fullPath,
    projectReads,
    ratio,
    target,
    verdict: ratio >= target ? 'PASS' : 'BELOW',
    gatewayCpu:
      gatewayMs === undefined
        ? undefined
        : {
            msPerRequest: gatewayMs,
            targetMs: gatewayCpuTargetMs,
            verdict: gatewayMs < gatewayCpuTargetMs ? 'PASS' : 'BELOW',
            baselineMsPerRequest:
              baselineMs[0] !== undefined && baselineMs[1] !== undefined
                ? mean(baselineMs[0], baselineMs[1])
                : undefined,
          },
  };
}

/** CPU ms per request the named processes used during a run, together; undefined without CPU figures. */
function cpuMsPerRequest(run: RunFigures, names: string[]): number | undefined {
  const shares = run.cpu?.filter((c) => names.includes(c.name) && Number.isFinite(c.percent));
  if (!shares || shares.length === 0 || run.requestsPerSecond <= 0) return undefined;
  return (shares.reduce((sum, c) => sum + c.percent, 0) * 10) / run.requestsPerSecond;
}

/** "gateway CPU per request: 0.31 ms (target < 0.35 ms): PASS; 0.90 of the baseline's whole work (0.34 ms)". */
const gatewayCpuLine = (cpu: CpuTarget | undefined) =>
  cpu
    ? `gateway CPU per request: ${cpu.msPerRequest.toFixed(2)} ms (target < ${cpu.targetMs} ms): ${cpu.verdict}` +
      (cpu.baselineMsPerRequest
        ? `; ${(cpu.msPerRequest / cpu.baselineMsPerRequest).toFixed(2)} of the baseline's whole work ` +
          `(its process and Postgres: ${cpu.baselineMsPerRequest.toFixed(2)} ms per request; the target was set at 0.61)`
        : '')
    : undefined;

const row = (name: string, f: Figures) =>
  `${name.padEnd(34)}${f.requestsPerSecond.toFixed(0).padStart(8)}${f.p50Ms.toFixed(1).padStart(9)}${f.p99Ms.toFixed(1).padStart(9)}`;
const header = (first: string) =>
  `${first.padEnd(34)}${'req/s'.padStart(8)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}`;
const percent = (x: number) => `${(x * 100).toFixed(1)} %`;
const signed = (x: number) => `${x >= 0 ? '+' : ''}${percent(x)}`;

/**
 * "gateway 96 % (1.5 ms/req), identity 41 % (...)": where the CPU went during a run, busiest first, and
 * the CPU time per request it amounts to.
 */
const cpuLine = (name: string, f: RunFigures) =>
  f.cpu
    ? `CPU during ${name}, % of one core (CPU ms per request): ${[...f.cpu]
        .filter((c) => Number.isFinite(c.percent) && c.percent > 0)
        .sort((a, b) => b.percent - a.percent)
        .map((c) => `${c.name} ${c.percent} (${cpuMsPerRequest(f, [c.name])?.toFixed(2) ?? '-'})`)
        .join(', ')}`
    : undefined;

/** "gateway-limited: 4180 of 5200 decisions (80 %) per process; event-loop lag p99 21 ms, max 45 ms". */
const gatewayLine = (name: string, f: RunFigures) =>
  f.gateway
    ? `${name}: ${f.gateway.fallbackDecisions} of ${f.gateway.requests} rate limit decisions (${percent(
        f.gateway.fallbackDecisions / f.gateway.requests,
      )}) taken per process for want of a timely Redis answer; event-loop lag p99 ${f.gateway.eventLoopLagP99Ms.toFixed(
        0,
      )} ms, max ${f.gateway.eventLoopLagMaxMs.toFixed(0)} ms`
    : undefined;

const lines = (...items: Array<string | undefined>) => items.filter((x) => x !== undefined).join('\n');

/** The projects comparison as a table on stdout. */
export function printProjects(result: BenchResult): void {
  const [first, second] = result.baselineRuns;
  const drift = second.requestsPerSecond / first.requestsPerSecond - 1;
  console.log(
    lines(
      '',
      `GET /v1/guard/projects/:id, ${result.connections} connections, ${result.durationSeconds} s per run after ${result.warmUpSeconds} s of warm-up, ${result.cpus} CPUs`,
      '',
      header('target'),
      row('baseline (run 1)', first),
      row('baseline (run 2)', second),
      row('baseline (mean)', result.baseline),
      row('full path', result.fullPath),
      '',
      `baseline drift between its two runs: ${signed(drift)}`,
      `full path / baseline throughput: ${percent(result.ratio)} (target >= ${percent(result.target)}): ${result.verdict}`,
      gatewayCpuLine(result.gatewayCpu),
      cpuLine('baseline (run 1)', first),
      cpuLine('full path', result.fullPath),
      cpuLine('baseline (run 2)', second),
      `budgets project reads during the full path (BUDGETS_PROJECT_CACHE=${result.projectReads.cache}): ` +
        `${result.projectReads.hit} from memory, ${result.projectReads.miss} from the database and kept, ` +
        `${result.projectReads.bypass} from the database bypassing the cache`,
    ),
  );
}

/** Target: rate limiting on Redis costs less than this share of the gateway's throughput. */
export const rateLimitTarget = 0.1;

export interface RateLimitResult {
  connections: number;
  /** The team limits set for the run (the largest identity accepts). */
  limits: { requestsPerMinute: number; concurrentRequests: number };
  /** RATE_LIMIT_REDIS_TIMEOUT_MS of the gateway as configured (the default unless set), and of the Redis-only one. */
  redisTimeoutMs: number;
  redisOnlyTimeoutMs: number;
  /** Mean of the two runs on the gateway with RATE_LIMIT=off. */
  off: Figures;
  offRuns: [RunFigures, RunFigures];
  /** Limiting with RATE_LIMIT_REDIS_TIMEOUT_MS as configured: Redis, or the per-process fallback. */
  on: RunFigures;
  /** Limiting with a timeout long enough that every decision comes from Redis. */
  onRedisOnly: RunFigures;
  /** 1 - onRedisOnly / off: the share of throughput limiting on Redis costs (negative: it was faster). */
  cost: number;
  /** 1 - on / off, as configured. */
  costAsConfigured: number;
  /** Change between the two runs without limiting: how much the machine drifted meanwhile. */
  drift: number;
  target: number;
  verdict: Verdict;
}

export function summarizeRateLimit(
  runs: { off1: RunFigures; on: RunFigures; onRedisOnly: RunFigures; off2: RunFigures },
  settings: {
    connections: number;
    limits: RateLimitResult['limits'];
    redisTimeoutMs: number;
    redisOnlyTimeoutMs: number;
  },
): RateLimitResult {
  const { off1, on, onRedisOnly, off2 } = runs;
  const off: Figures = {
    requestsPerSecond: mean(off1.requestsPerSecond, off2.requestsPerSecond),
    p50Ms: mean(off1.p50Ms, off2.p50Ms),
    p99Ms: mean(off1.p99Ms, off2.p99Ms),
    requests: off1.requests + off2.requests,
  };
  const cost = 1 - onRedisOnly.requestsPerSecond / off.requestsPerSecond;
  return {
    ...settings,
    off,
    offRuns: [off1, off2],
    on,
    onRedisOnly,
    cost,
    costAsConfigured: 1 - on.requestsPerSecond / off.requestsPerSecond,
    drift: off2.requestsPerSecond / off1.requestsPerSecond - 1,
    target: rateLimitTarget,
    verdict: cost < rateLimitTarget ? 'PASS' : 'BELOW',
  };
}

export function printRateLimit(result: RateLimitResult): void {
  const [off1, off2] = result.offRuns;
  const configured = `RATE_LIMIT=on, timeout ${result.redisTimeoutMs} ms`;
  const redisOnly = `RATE_LIMIT=on, timeout ${result.redisOnlyTimeoutMs} ms`;
  const redisOnlyFallbacks = result.onRedisOnly.gateway?.fallbackDecisions ?? 0;
  console.log(
    lines(
      '',
      `Rate limiting cost: the same GET with one fresh API key (team limits ${result.limits.requestsPerMinute}/min, ${result.limits.concurrentRequests} in flight), ${result.connections} connections`,
      '',
      header('gateway'),
      row('RATE_LIMIT=off (run 1)', off1),
      row(configured, result.on),
      row(redisOnly, result.onRedisOnly),
      row('RATE_LIMIT=off (run 2)', off2),
      row('RATE_LIMIT=off (mean)', result.off),
      '',
      cpuLine('off (run 1)', off1),
      cpuLine(`on, ${result.redisTimeoutMs} ms`, result.on),
      cpuLine(`on, ${result.redisOnlyTimeoutMs} ms`, result.onRedisOnly),
      gatewayLine(`timeout ${result.redisTimeoutMs} ms`, result.on),
      gatewayLine(`timeout ${result.redisOnlyTimeoutMs} ms`, result.onRedisOnly),
      redisOnlyFallbacks > 0
        ? `WARNING: even with a ${result.redisOnlyTimeoutMs} ms timeout ${redisOnlyFallbacks} decisions did not come from Redis`
        : undefined,
      `drift between the two runs without limiting: ${signed(result.drift)}`,
      `cost of limiting as configured: ${percent(result.costAsConfigured)}`,
      `cost of limiting on Redis (every decision from Redis): ${percent(result.cost)} of throughput (target < ${percent(result.target)}): ${result.verdict}`,
      Math.abs(result.drift) >= Math.abs(result.cost) || Math.abs(result.drift) >= result.target
        ? `  not conclusive: the runs without limiting differ by ${percent(Math.abs(result.drift))}; longer runs (BENCH_DURATION=30) narrow it`
        : undefined,
    ),
  );
}

export interface LatencyFigures {
  acquisitions: number;
  /** Acquisitions started at once (1: one after the other). */
  inFlight: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Acquisitions slower than the gateway's RATE_LIMIT_REDIS_TIMEOUT_MS default, which it would not wait for. */
  overGatewayTimeout: number;
  releaseP50Ms: number;
  releaseP99Ms: number;
}

export interface LimiterResult {
  gatewayTimeoutMs: number;
  sequential: LatencyFigures;
  concurrent: LatencyFigures;
}

export function printLimiter(result: LimiterResult): void {
  const line = (name: string, f: LatencyFigures) =>
    `${name.padEnd(20)}${String(f.acquisitions).padStart(7)}${f.perSecond.toFixed(0).padStart(9)}${f.p50Ms.toFixed(2).padStart(9)}${f.p99Ms.toFixed(2).padStart(9)}${f.maxMs.toFixed(1).padStart(9)}${f.releaseP99Ms.toFixed(2).padStart(13)}${String(f.overGatewayTimeout).padStart(9)}`;
  console.log(
    lines(
      '',
      'Limiter latency on real Redis: createRedisLimiter().acquire(key, policy), then lease.release(), one key, from the bench process',
      '',
      `${'run'.padEnd(20)}${'calls'.padStart(7)}${'calls/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}${'release p99'.padStart(13)}${`> ${result.gatewayTimeoutMs} ms`.padStart(9)}`,
      line('sequential', result.sequential),
      line(`${result.concurrent.inFlight} in flight`, result.concurrent),
      '',
      `(> ${result.gatewayTimeoutMs} ms: acquisitions slower than the gateway's default RATE_LIMIT_REDIS_TIMEOUT_MS)`,
    ),
  );
}

/** Target: `userName eq` lookups through the gateway answer within this p99 at this concurrency. */
export const scimTarget = { p99Ms: 10, connections: 50 };

/** What EXPLAIN ANALYZE says of the statements a SCIM list request runs. */
export interface PlanSummary {
  /** The filter (or the page) explained, as the identity provider sends it. */
  query: string;
  /** Indexes the plans of its statements use. */
  indexes: string[];
  /** Scan nodes without an index (Seq Scan on scim_users), which grow with the team. */
  seqScans: string[];
  /** Rows of the page, and the statements' planning and execution time (a warm second EXPLAIN ANALYZE). */
  rows: number;
  planningMs: number;
  executionMs: number;
}

export interface ScimResult {
  users: number;
  seedSeconds: number;
  connections: number;
  eq: RunFigures;
  /** eq with one connection, right after: the time of one request without queueing. */
  eqOneConnection: RunFigures;
  co: RunFigures;
  list: RunFigures;
  explain: { eq: PlanSummary; co: PlanSummary; list: PlanSummary };
  target: typeof scimTarget;
  verdict: Verdict;
}

export function printScim(result: ScimResult): void {
  const plan = (name: string, p: PlanSummary) =>
    `${`${name}:`.padEnd(7)}${
      p.seqScans.length === 0
        ? `index used (${p.indexes.join(', ')})`
        : `NO INDEX: ${p.seqScans.join(', ')}${p.indexes.length ? ` (indexes also used: ${p.indexes.join(', ')})` : ''}`
    }; ${p.rows} rows; Postgres ${p.planningMs.toFixed(2)} ms planning + ${p.executionMs.toFixed(2)} ms executing; ${p.query}`;
  const { target } = result;
  const p99 = result.eq.p99Ms;
  const by =
    p99 < target.p99Ms ? '' : ` (p99 ${p99.toFixed(0)} ms, ${(p99 - target.p99Ms).toFixed(0)} ms over)`;
  console.log(
    lines(
      '',
      `SCIM on a team of ${result.users} users (seeded in ${result.seedSeconds.toFixed(1)} s), through the limiting gateway, ${result.connections} connections`,
      '',
      header('GET /scim/v2/Users'),
      row('filter userName eq', result.eq),
      row('filter userName eq, 1 connection', result.eqOneConnection),
      row('filter userName co', result.co),
      row('startIndex=random&count=100', result.list),
      '',
      cpuLine('eq', result.eq),
      cpuLine('eq, 1 connection', result.eqOneConnection),
      cpuLine('co', result.co),
      cpuLine('pages', result.list),
      gatewayLine('eq', result.eq),
      plan('eq', result.explain.eq),
      plan('co', result.explain.co),
      plan('pages', result.explain.list),
      `${result.connections} requests in flight at ${result.eq.requestsPerSecond.toFixed(0)} req/s spend ${(
        (result.connections / result.eq.requestsPerSecond) *
        1000
      ).toFixed(
        0,
      )} ms each on average (Little's law); a p99 under ${target.p99Ms} ms at ${target.connections} in flight needs more than ${(
        (target.connections / target.p99Ms) *
        1000
      ).toFixed(0)} req/s`,
      `eq p99 under ${target.p99Ms} ms at ${target.connections} concurrent requests: ${result.verdict}${by}`,
    ),
  );
}

/**
 * Targets of the costs section: upload rate of the large file; peak resident memory of the gateway and
 * of costs at the large file at most this multiple of their peak at 100,000 rows ("memory flat"); p99 of
 * a budget's evaluation; p99 from an upload's answer to its violation in the list.
 */
export const costsTargets = {
  rowsPerSecond: 50_000,
  memoryGrowth: 1.25,
  evaluationMs: 200,
  violationP99Ms: 1_000,
};

export interface Latency {
  calls: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface IngestRun {
  rows: number;
  bytes: number;
  /** From the request's start to the 200 answer. */
  seconds: number;
  /** From the last byte handed to the socket to the answer: the service's work after reading the file. */
  afterBodySeconds: number;
  rowsPerSecond: number;
  /** VmRSS right before the upload and its highest reading during it (polled every 50 ms), MiB. */
  rssBeforeMiB: { gateway: number; costs: number };
  rssPeakMiB: { gateway: number; costs: number };
  /** The highest reading in each quarter of the upload's time. */
  rssPeakByQuarterMiB: { gateway: number[]; costs: number[] };
  /** CPU seconds each process spent during the upload (user + system; postgres: the database's backends). */
  cpuSeconds: Record<string, number>;
}

export interface ViolationLatency extends Latency {
  /** GET /v1/guard/violations requests it took, in all runs. */
  polls: number;
  verdict: Verdict;
}

export interface CostsResult {
  /** The month (UTC) of every generated file and record: the budgets' current period. */
  month: string;
  ingest: {
    runs: IngestRun[];
    /** Of the largest file. */
    rowsPerSecond: number;
    rateVerdict: Verdict;
    /** Highest ratio of a process's peak memory at the largest file to its peak at 100,000 rows. */
    memoryGrowth: number;
    memoryVerdict: Verdict;
  };
  evaluation: {
    rows: number;
    dailySpendRows: number;
    fillSeconds: number;
    spend: number;
    taggedSpend: number;
    /** current_spend of the untagged budget after its evaluations (equals `spend`). */
    budgetSpend: number;
    getSpend: Latency;
    getSpendTagged: Latency;
    patchBudget: Latency;
    patchTagged: Latency;
    verdict: Verdict;
  };
  violation: ViolationLatency | { skipped: string };
}

export function printCosts(result: CostsResult): void {
  const { ingest, evaluation, violation } = result;
  const t = costsTargets;
  const mib = (x: number) => `${x.toFixed(0)} MiB`;
  const ms = (x: number) => x.toFixed(1).padStart(9);
  const latency = (name: string, l: Latency) =>
    `${name.padEnd(46)}${String(l.calls).padStart(6)}${ms(l.p50Ms)}${ms(l.p99Ms)}${ms(l.maxMs)}`;
  const latencyHeader = (first: string) =>
    `${first.padEnd(46)}${'calls'.padStart(6)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}`;
  const [small, large] = [ingest.runs[0]!, ingest.runs.at(-1)!];
  console.log(
    lines(
      '',
      `Costs: ingest, evaluation, violation latency (data for ${result.month})`,
      '',
      `${'upload (POST .../cost-data)'.padEnd(30)}${'rows'.padStart(10)}${'MiB'.padStart(7)}${'s'.padStart(8)}${'rows/s'.padStart(9)}${'gateway RSS before/peak'.padStart(26)}${'costs RSS before/peak'.padStart(24)}`,
      ...ingest.runs.map(
        (r) =>
          `${''.padEnd(30)}${String(r.rows).padStart(10)}${(r.bytes / 2 ** 20).toFixed(0).padStart(7)}${r.seconds.toFixed(1).padStart(8)}${r.rowsPerSecond.toFixed(0).padStart(9)}${`${mib(r.rssBeforeMiB.gateway)} / ${mib(r.rssPeakMiB.gateway)}`.padStart(26)}${`${mib(r.rssBeforeMiB.costs)} / ${mib(r.rssPeakMiB.costs)}`.padStart(24)}`,
      ),
      ...ingest.runs.map(
        (r) =>
          `peak RSS per quarter of the ${r.rows}-row upload, MiB: gateway ${r.rssPeakByQuarterMiB.gateway.map((x) => x.toFixed(0)).join(', ')}; costs ${r.rssPeakByQuarterMiB.costs.map((x) => x.toFixed(0)).join(', ')}`,
      ),
      ...ingest.runs.map(
        (r) =>
          `CPU seconds during the ${r.rows}-row upload (${r.seconds.toFixed(1)} s, of which ${r.afterBodySeconds.toFixed(1)} s after the last byte was sent): ${Object.entries(
            r.cpuSeconds,
          )
            .map(([name, seconds]) => `${name} ${seconds.toFixed(1)}`)
            .join(', ')}`,
      ),
      '',
      `ingest rate of ${large.rows} rows: ${large.rowsPerSecond.toFixed(0)} rows/s (target >= ${t.rowsPerSecond}): ${ingest.rateVerdict}`,
      `memory flat from ${small.rows} to ${large.rows} rows, peak of each process at most ${t.memoryGrowth}x that at ${small.rows} (after a warm-up upload): ` +
        `gateway ${(large.rssPeakMiB.gateway / small.rssPeakMiB.gateway).toFixed(2)}x, costs ${(large.rssPeakMiB.costs / small.rssPeakMiB.costs).toFixed(2)}x: ${ingest.memoryVerdict}`,
      '',
      `Budget evaluation over ${evaluation.rows} cost records of one connection (` +
        `${evaluation.dailySpendRows} daily_spend rows; filled in SQL in ${evaluation.fillSeconds.toFixed(0)} s); ` +
        `spend ${evaluation.spend.toFixed(2)} USD, tagged ${evaluation.taggedSpend.toFixed(2)} USD, budget current_spend ${evaluation.budgetSpend}`,
      latencyHeader(''),
      latency('GetSpend (gRPC, the month)', evaluation.getSpend),
      latency('GetSpend with tags team, environment', evaluation.getSpendTagged),
      latency('PATCH /v1/guard/budgets/:id (evaluates)', evaluation.patchBudget),
      latency('PATCH of a budget with tags (evaluates)', evaluation.patchTagged),
      `budget evaluation p99 under ${t.evaluationMs} ms: ${evaluation.verdict}`,
      '',
      'skipped' in violation
        ? `Violation latency: skipped (${violation.skipped})`
        : lines(
            "Violation latency: from the upload's 200 answer to the first GET /v1/guard/violations?budget_id= listing it",
            latencyHeader(''),
            latency('fresh connection, project, budget per run', violation),
            `(${violation.polls} polls, every 10 ms) p99 under ${t.violationP99Ms} ms: ${violation.verdict}`,
          ),
    ),
  );
}

/** The sections run (BENCH_SECTIONS); a section not run is absent. */
export interface AllResults extends Partial<BenchResult> {
  rateLimit?: RateLimitResult;
  limiter?: LimiterResult;
  scim?: ScimResult;
  costs?: CostsResult;
  scanner?: ScannerResult | { skipped: string };
  largeTenant?: LargeTenantResult | { skipped: string };
}

/** Every figure of the run as one `BENCH_RESULT {...}` line. */
export function printResult(result: AllResults): void {
  console.log(`\nBENCH_RESULT ${JSON.stringify(result)}`);
}
