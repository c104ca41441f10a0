import type { Figures, Verdict } from './report';

/** The scanner section's targets, figures and table (BENCH_SECTIONS=scanner). */
export const scannerTargets = { largeScanSeconds: 30, workerRatio: 1.6, postureP99Ms: 50 };

export interface ThroughputRun {
  workers: number;
  scans: number;
  seconds: number;
  scansPerSecond: number;
  /** First started_at to last completed_at of the run's scans (the workers' own span). */
  workerSpanSeconds: number;
  /** Scans each worker process ran, most first. */
  scansPerWorker: number[];
  /** CPU seconds each process (the workers as one, Postgres's backends as one) used during the run. */
  cpuSeconds: Record<string, number>;
}

export interface ScannerResult {
  /** os.availableParallelism() of the machine the bench ran on. */
  cores: number;
  largeScan: {
    rows: number;
    seconds: number;
    resourcesScanned: number;
    findingsFirstPage: number;
    polls: number;
    verdict: Verdict;
  };
  throughput: { one: ThroughputRun; two: ThroughputRun; ratio: number; verdict: Verdict };
  posture: Figures & { connections: number; verdict: Verdict };
  /** The same read for one small project (`project_id`), to tell how the time goes with the team's data. */
  projectPosture: Figures & { connections: number };
}

export function printScanner(result: ScannerResult | { skipped: string }): void {
  if ('skipped' in result) {
    console.log(`\nScanner: skipped (${result.skipped})`);
    return;
  }
  const { largeScan, throughput, posture, projectPosture, cores } = result;
  const rows = [
    [
      `one scan of ${largeScan.rows} FOCUS rows (POST to completed)`,
      `< ${scannerTargets.largeScanSeconds} s`,
      `${largeScan.seconds.toFixed(1)} s (${largeScan.resourcesScanned} resources)`,
      largeScan.verdict,
    ],
    [
      `${throughput.one.scans} small scans, 1 worker process`,
      '',
      `${throughput.one.scansPerSecond.toFixed(2)} scans/s (${throughput.one.seconds.toFixed(1)} s; workers' span ${throughput.one.workerSpanSeconds.toFixed(1)} s)`,
      '',
    ],
    [
      `${throughput.two.scans} small scans, 2 worker processes`,
      '',
      `${throughput.two.scansPerSecond.toFixed(2)} scans/s (${throughput.two.seconds.toFixed(1)} s; workers' span ${throughput.two.workerSpanSeconds.toFixed(1)} s; per process ${throughput.two.scansPerWorker.join(' + ')})`,
      '',
    ],
    [
      `2 workers / 1 worker (${cores} cores)`,
      `>= ${scannerTargets.workerRatio}x with the cores for it`,
      `${throughput.ratio.toFixed(2)}x`,
      throughput.verdict,
    ],
    [
      `GET /v1/guard/cost-posture p99, ${posture.connections} connections`,
      `< ${scannerTargets.postureP99Ms} ms`,
      `${posture.p99Ms} ms (p50 ${posture.p50Ms} ms, ${posture.requestsPerSecond.toFixed(0)} req/s)`,
      posture.verdict,
    ],
    [
      `(the same for one small project, project_id)`,
      '',
      `${projectPosture.p99Ms} ms (p50 ${projectPosture.p50Ms} ms, ${projectPosture.requestsPerSecond.toFixed(0)} req/s)`,
      '',
    ],
  ];
  console.log('\nScanner');
  console.log('| measure | target | measured | verdict |\n|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  for (const run of [throughput.one, throughput.two])
    console.log(
      `CPU seconds during the run with ${run.workers} worker(s): ${JSON.stringify(run.cpuSeconds)}`,
    );
  if (cores < 4 && throughput.verdict === 'BELOW')
    console.log(
      `(${cores} cores, shared by Postgres, NATS and every service: the 1.6x target is not expected here)`,
    );
}
