import type autocannon from 'autocannon';

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

export type RunFigures = Figures & { cpu?: CpuShare[] };

export type Verdict = 'PASS' | 'BELOW';

export interface BenchResult {
  date: string;
  durationSeconds: number;
  warmUpSeconds: number;
  connections: number;
  cpus: number;
  baseline: Figures;
  baselineRuns: [Figures, Figures];
  fullPath: Figures;
  ratio: number;
  target: number;
  verdict: Verdict;
}

/** Target: the full path serves at least this share of the baseline's throughput. */
export const target = 0.5;

export const figuresOf = (result: autocannon.Result): Figures => ({
  requestsPerSecond: result.requests.average,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  requests: result.requests.total,
});

const mean = (a: number, b: number) => (a + b) / 2;

export function summarize(
  runs: { baseline1: Figures; fullPath: Figures; baseline2: Figures },
  settings: { durationSeconds: number; warmUpSeconds: number; connections: number; cpus: number },
): BenchResult {
  const { baseline1, fullPath, baseline2 } = runs;
  const baseline: Figures = {
    requestsPerSecond: mean(baseline1.requestsPerSecond, baseline2.requestsPerSecond),
    p50Ms: mean(baseline1.p50Ms, baseline2.p50Ms),
    p99Ms: mean(baseline1.p99Ms, baseline2.p99Ms),
    requests: baseline1.requests + baseline2.requests,
  };
  const ratio = fullPath.requestsPerSecond / baseline.requestsPerSecond;
  return {
    date: new Date().toISOString(),
    ...settings,
    baseline,
    baselineRuns: [baseline1, baseline2],
    fullPath,
    ratio,
    target,
    verdict: ratio >= target ? 'PASS' : 'BELOW',
  };
}

const row = (name: string, f: Figures) =>
  `${name.padEnd(26)}${f.requestsPerSecond.toFixed(0).padStart(10)}${f.p50Ms.toFixed(1).padStart(10)}${f.p99Ms.toFixed(1).padStart(10)}`;
const header = (first: string) =>
  `${first.padEnd(26)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}`;
const percent = (x: number) => `${(x * 100).toFixed(1)} %`;
const signed = (x: number) => `${x >= 0 ? '+' : ''}${percent(x)}`;
const ms = (x: number) => `${x.toFixed(2)} ms`;

/** "gateway 96 %, identity 41 %, ...": where the CPU went during a run, busiest first. */
const cpuLine = (name: string, f: RunFigures) =>
  f.cpu
    ? `  CPU during ${name} (% of one core): ${[...f.cpu]
        .filter((c) => Number.isFinite(c.percent) && c.percent > 0)
        .sort((a, b) => b.percent - a.percent)
        .map((c) => `${c.name} ${c.percent}`)
        .join(', ')}`
    : '';

/** The projects comparison as a table on stdout. */
export function printProjects(result: BenchResult): void {
  const [first, second] = result.baselineRuns;
  const drift = second.requestsPerSecond / first.requestsPerSecond - 1;
  console.log(
    [
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
    ].join('\n'),
  );
}

/** Target: rate limiting on Redis costs less than this share of the gateway's throughput. */
export const rateLimitTarget = 0.1;

export interface RateLimitResult {
  connections: number;
  /** The team limits set for the run (the largest identity accepts). */
  limits: { requestsPerMinute: number; concurrentRequests: number };
  /** Mean of the two runs on the gateway with RATE_LIMIT=off. */
  off: Figures;
  offRuns: [RunFigures, RunFigures];
  on: RunFigures;
  /** 1 - on / off: the share of throughput limiting costs (negative: on was faster). */
  cost: number;
  /** Change between the two runs without limiting: how much the machine drifted meanwhile. */
  drift: number;
  target: number;
  verdict: Verdict;
  /** Decisions the limited gateway took per process because Redis did not answer in time. */
  fallbackDecisions: number;
}

export function summarizeRateLimit(
  runs: { off1: RunFigures; on: RunFigures; off2: RunFigures },
  settings: { connections: number; limits: RateLimitResult['limits']; fallbackDecisions: number },
): RateLimitResult {
  const { off1, on, off2 } = runs;
  const off: Figures = {
    requestsPerSecond: mean(off1.requestsPerSecond, off2.requestsPerSecond),
    p50Ms: mean(off1.p50Ms, off2.p50Ms),
    p99Ms: mean(off1.p99Ms, off2.p99Ms),
    requests: off1.requests + off2.requests,
  };
  const cost = 1 - on.requestsPerSecond / off.requestsPerSecond;
  return {
    ...settings,
    off,
    offRuns: [off1, off2],
    on,
    cost,
    drift: off2.requestsPerSecond / off1.requestsPerSecond - 1,
    target: rateLimitTarget,
    verdict: cost < rateLimitTarget ? 'PASS' : 'BELOW',
  };
}

export function printRateLimit(result: RateLimitResult): void {
  const [off1, off2] = result.offRuns;
  const fallback =
    result.fallbackDecisions === 0
      ? 'every decision of the limited gateway came from Redis (ratelimit_fallback_total 0)'
      : `WARNING: ${result.fallbackDecisions} decisions were taken per process because Redis did not answer ` +
        'within RATE_LIMIT_REDIS_TIMEOUT_MS (ratelimit_fallback_total); the "on" figures are partly not Redis';
  console.log(
    [
      '',
      `Rate limiting cost: same GET, one fresh API key (limits ${result.limits.requestsPerMinute}/min, ${result.limits.concurrentRequests} in flight), ${result.connections} connections`,
      '',
      header('gateway'),
      row('RATE_LIMIT=off (run 1)', off1),
      row('RATE_LIMIT=on, Redis', result.on),
      row('RATE_LIMIT=off (run 2)', off2),
      row('RATE_LIMIT=off (mean)', result.off),
      '',
      cpuLine('off run 1', off1),
      cpuLine('on', result.on),
      `drift between the two runs without limiting: ${signed(result.drift)}`,
      fallback,
      `cost of limiting: ${percent(result.cost)} of throughput (target < ${percent(result.target)}): ${result.verdict}`,
    ]
      .filter((line, i, lines) => line !== '' || lines[i - 1] !== '')
      .join('\n'),
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
    `${name.padEnd(26)}${String(f.acquisitions).padStart(8)}${f.perSecond.toFixed(0).padStart(10)}${f.p50Ms.toFixed(2).padStart(10)}${f.p99Ms.toFixed(2).padStart(10)}${f.maxMs.toFixed(1).padStart(9)}${f.releaseP99Ms.toFixed(2).padStart(13)}${String(f.overGatewayTimeout).padStart(8)}`;
  console.log(
    [
      '',
      'Limiter latency on real Redis: createRedisLimiter().acquire(key, policy), then lease.release(), from the bench process',
      '',
      `${'run'.padEnd(26)}${'calls'.padStart(8)}${'calls/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'max ms'.padStart(9)}${'release p99'.padStart(13)}${`>${result.gatewayTimeoutMs} ms`.padStart(8)}`,
      line('sequential', result.sequential),
      line(`${result.concurrent.inFlight} in flight`, result.concurrent),
      '',
      `(>${result.gatewayTimeoutMs} ms: acquisitions slower than RATE_LIMIT_REDIS_TIMEOUT_MS's default, which the gateway would answer from its per-process fallback)`,
    ].join('\n'),
  );
}

/** Target: `userName eq` lookups through the gateway answer within this p99 at this concurrency. */
export const scimTarget = { p99Ms: 10, connections: 50 };

/** What EXPLAIN says of a query the SCIM list runs. */
export interface PlanSummary {
  /** The filter (or the page) explained, as the identity provider sends it. */
  query: string;
  /** Indexes the plans of its statements use; empty when Postgres reads the table. */
  indexes: string[];
  /** Scan nodes without an index (Seq Scan on scim_users), which grow with the team. */
  seqScans: string[];
  /** Rows of the page, and the statements' planning + execution time, from EXPLAIN ANALYZE. */
  rows: number;
  postgresMs: number;
}

export interface ScimResult {
  users: number;
  seedSeconds: number;
  connections: number;
  eq: RunFigures;
  co: RunFigures;
  list: RunFigures;
  explain: { eq: PlanSummary; co: PlanSummary; list: PlanSummary };
  fallbackDecisions: number;
  target: typeof scimTarget;
  verdict: Verdict;
}

export function printScim(result: ScimResult): void {
  const plan = (name: string, p: PlanSummary) =>
    `${name.padEnd(6)}${
      p.seqScans.length === 0
        ? `index used: ${p.indexes.join(', ')}`
        : `NO INDEX for ${p.seqScans.join(', ')}${p.indexes.length ? ` (indexes also used: ${p.indexes.join(', ')})` : ''}`
    }; ${p.rows} rows, ${ms(p.postgresMs)} in Postgres (${p.query})`;
  const { target } = result;
  const p99 = result.eq.p99Ms;
  const by = p99 < target.p99Ms ? '' : ` (p99 ${p99.toFixed(0)} ms, ${(p99 - target.p99Ms).toFixed(0)} ms over)`;
  console.log(
    [
      '',
      `SCIM on a team of ${result.users} users (seeded in ${result.seedSeconds.toFixed(1)} s), through the limited gateway, ${result.connections} connections`,
      '',
      header('GET /scim/v2/Users'),
      row('filter userName eq', result.eq),
      row('filter userName co', result.co),
      row('pages of 100', result.list),
      '',
      cpuLine('eq', result.eq),
      cpuLine('co', result.co),
      cpuLine('pages', result.list),
      plan('eq', result.explain.eq),
      plan('co', result.explain.co),
      plan('pages', result.explain.list),
      result.fallbackDecisions === 0
        ? 'every rate limit decision came from Redis (ratelimit_fallback_total 0)'
        : `WARNING: ${result.fallbackDecisions} rate limit decisions were taken per process (Redis too slow)`,
      `eq p99 under ${target.p99Ms} ms at ${target.connections} concurrent requests: ${result.verdict}${by}`,
    ].join('\n'),
  );
}

export interface AllResults extends BenchResult {
  rateLimit: RateLimitResult;
  limiter: LimiterResult;
  scim: ScimResult;
}

/** Every figure of the run as one `BENCH_RESULT {...}` line. */
export function printResult(result: AllResults): void {
  console.log(`\nBENCH_RESULT ${JSON.stringify(result)}`);
}
