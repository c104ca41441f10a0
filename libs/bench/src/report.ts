import type autocannon from 'autocannon';

export interface Figures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
}

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
  verdict: 'PASS' | 'BELOW';
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

/** The table on stdout, then the figures as one `BENCH_RESULT {...}` line. */
export function printReport(result: BenchResult): void {
  const row = (name: string, f: Figures) =>
    `${name.padEnd(26)}${f.requestsPerSecond.toFixed(0).padStart(10)}${f.p50Ms.toFixed(1).padStart(10)}${f.p99Ms.toFixed(1).padStart(10)}`;
  const percent = (x: number) => `${(x * 100).toFixed(1)} %`;
  const [first, second] = result.baselineRuns;
  const drift = second.requestsPerSecond / first.requestsPerSecond - 1;
  console.log(
    [
      '',
      `GET /v1/guard/projects/:id, ${result.connections} connections, ${result.durationSeconds} s per run after ${result.warmUpSeconds} s of warm-up, ${result.cpus} CPUs`,
      '',
      `${'target'.padEnd(26)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}`,
      row('baseline (run 1)', first),
      row('baseline (run 2)', second),
      row('baseline (mean)', result.baseline),
      row('full path', result.fullPath),
      '',
      `baseline drift between its two runs: ${drift >= 0 ? '+' : ''}${percent(drift)}`,
      `full path / baseline throughput: ${percent(result.ratio)} (target >= ${percent(result.target)}): ${result.verdict}`,
      '',
      `BENCH_RESULT ${JSON.stringify(result)}`,
    ].join('\n'),
  );
}
