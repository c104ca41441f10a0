import type { Latency, Verdict } from './report';

/** The large-tenant section's targets (issue 19), figures and table (BENCH_SECTIONS=large-tenant). */
export const largeTenantTargets = {
  rowsPerSecond: 150_000,
  /** Peak RSS of the large upload over that of a file a tenth its size. */
  memoryGrowth: 1.25,
  /** cost_records after a restatement over before it (no growth; 5 % for the free space maps). */
  tableGrowth: 1.05,
  speedUp: { '2': 1.8, '4': 3.2 },
  evaluationMs: 200,
};

export interface LargeIngestRun {
  rows: number;
  bytes: number;
  seconds: number;
  /** From the last byte sent to the answer: about the service's work after reading the file. */
  afterBodySeconds: number;
  rowsPerSecond: number;
  rssPeakMiB: { gateway: number; costs: number };
  /**
   * The highest reading of each quarter of the upload's time: memory that grows with the rows read climbs
   * from quarter to quarter, a heap that settles does not (a higher peak than the small file's may be one
   * collection's timing).
   */
  rssPeakByQuarterMiB?: { gateway: number[]; costs: number[] };
  /** CPU seconds of the gateway, costs and the database's Postgres backends during the upload. */
  cpuSeconds: Record<'gateway' | 'costs' | 'postgres', number>;
  /** The one-minute load average at its end (other work on the machine slows the rate). */
  loadAverage: number;
}

export interface ScanRun {
  workers: number;
  seconds: number;
  resourcesScanned: number;
  /** Shards the scan was split into, when the scanner splits scans. */
  shardsTotal: number | undefined;
  /** CPU seconds each worker process used during the scan. */
  workerCpuSeconds: number[];
  /** What held each worker: `0.25 core`, or why nothing did. */
  limit: string;
  /** The worker processes scanner.scans names for the scan. */
  scanWorkerPids: string[];
  anyFindings: boolean;
  /** Where the scan's time went, by the scanner's clock (scans and scan_shards). */
  phases?: { planSeconds: number; shardsSeconds: number; mergeSeconds: number; shardSeconds: number[] };
}

export interface LargeTenantResult {
  cores: number;
  rows: number;
  resources: number;
  ingest: {
    small: LargeIngestRun;
    large: LargeIngestRun;
    rateVerdict: Verdict;
    memoryGrowth: number;
    memoryVerdict: Verdict;
  };
  restatement: {
    seconds: number;
    afterBodySeconds: number;
    rowsPerSecond: number;
    tableMiBBefore: number;
    tableMiBAfter: number;
    verdict: Verdict;
  };
  /** The scan before the measured ones, which opens the estate's findings (not measured against a target). */
  firstScan?: ScanRun;
  scans: ScanRun[];
  /** Time with one worker over time with n, by n. */
  speedUps: Record<string, number>;
  scanVerdicts: Record<string, Verdict>;
  /** Not measured when only the ingest part ran (BENCH_LARGE_PARTS=ingest). */
  evaluation?: Latency & { budgetSpend: number; verdict: Verdict };
}

const n = (value: number) => Math.round(value).toLocaleString('en-US');

export function printLargeTenant(result: LargeTenantResult | { skipped: string }): void {
  if ('skipped' in result) {
    console.log(`\nLarge tenant: skipped (${result.skipped})`);
    return;
  }
  const { ingest, restatement, scans, evaluation } = result;
  const t = largeTenantTargets;
  const rows: string[][] = [
    [
      `ingest of ${n(ingest.large.rows)} rows (${(ingest.large.bytes / 1024 ** 3).toFixed(2)} GiB) through REST`,
      `>= ${n(t.rowsPerSecond)} rows/s`,
      `${n(ingest.large.rowsPerSecond)} rows/s (${ingest.large.seconds.toFixed(1)} s, ${ingest.large.afterBodySeconds.toFixed(1)} s of it after the body)`,
      ingest.rateVerdict,
    ],
    [
      'CPU per 1,000,000 rows (gateway, costs, Postgres)',
      '',
      (['gateway', 'costs', 'postgres'] as const)
        .map((name) => `${name} ${((ingest.large.cpuSeconds[name] / ingest.large.rows) * 1e6).toFixed(1)} s`)
        .join(', ') + ` (load average ${ingest.large.loadAverage.toFixed(1)})`,
      '',
    ],
    [
      `(a tenth of it: ${n(ingest.small.rows)} rows)`,
      '',
      `${n(ingest.small.rowsPerSecond)} rows/s (${ingest.small.seconds.toFixed(1)} s)`,
      '',
    ],
    [
      'peak RSS, large file / a tenth (gateway, costs)',
      `<= ${t.memoryGrowth}x`,
      `${ingest.memoryGrowth.toFixed(2)}x (gateway ${n(ingest.small.rssPeakMiB.gateway)} to ${n(ingest.large.rssPeakMiB.gateway)} MiB, costs ${n(ingest.small.rssPeakMiB.costs)} to ${n(ingest.large.rssPeakMiB.costs)} MiB)`,
      ingest.memoryVerdict,
    ],
    [
      'peak RSS of the large upload, by quarter of its time (gateway; costs)',
      '',
      ingest.large.rssPeakByQuarterMiB
        ? `${ingest.large.rssPeakByQuarterMiB.gateway.map(n).join(', ')} MiB; ${ingest.large.rssPeakByQuarterMiB.costs.map(n).join(', ')} MiB`
        : 'not measured',
      '',
    ],
    [
      'restating the month (the same file again)',
      '',
      `${restatement.seconds.toFixed(1)} s (${n(restatement.rowsPerSecond)} rows/s, ${restatement.afterBodySeconds.toFixed(1)} s after the body)`,
      '',
    ],
    [
      'cost_records with partitions, before / after the restatement',
      'no growth',
      `${n(restatement.tableMiBBefore)} / ${n(restatement.tableMiBAfter)} MiB`,
      restatement.verdict,
    ],
    ...(result.firstScan
      ? [
          [
            `first scan, ${result.firstScan.workers} worker(s) (opens the findings; the scans below re-scan)`,
            '',
            `${result.firstScan.seconds.toFixed(1)} s`,
            '',
          ],
        ]
      : []),
    ...scans.map((scan) => [
      `one scan, ${scan.workers} worker(s) at ${scan.limit} each`,
      scan.workers === 1 ? '' : `>= ${t.speedUp[String(scan.workers) as '2' | '4'] ?? '-'}x`,
      `${scan.seconds.toFixed(1)} s, ${result.speedUps[String(scan.workers)]!.toFixed(2)}x; ${n(scan.resourcesScanned)} resources of ${n(result.resources)}; shards ${scan.shardsTotal ?? '-'}; worker CPU s ${scan.workerCpuSeconds.join(' + ')}${scan.phases ? `; plan ${scan.phases.planSeconds.toFixed(1)} s, shards ${scan.phases.shardsSeconds.toFixed(1)} s (each ${scan.phases.shardSeconds.join(', ')}), merge ${scan.phases.mergeSeconds.toFixed(1)} s` : ''}`,
      result.scanVerdicts[String(scan.workers)] ?? '',
    ]),
    ...(evaluation
      ? [
          [
            `budget evaluation (PATCH) over the ${n(result.rows)} rows`,
            `p99 < ${t.evaluationMs} ms`,
            `p50 ${evaluation.p50Ms.toFixed(1)} ms, p99 ${evaluation.p99Ms.toFixed(1)} ms (${evaluation.calls} calls)`,
            evaluation.verdict,
          ],
        ]
      : []),
  ];
  console.log(
    `\nLarge tenant (${n(result.rows)} rows, ${n(result.resources)} resources, ${result.cores} cores)`,
  );
  console.log('| measure | target | measured | verdict |\n|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  // A PASS needs the scan split across the workers (see large-tenant.ts), not only a time.
  const shared = new Set(
    scans.flatMap((scan) => (scan.workers > 1 && scan.scanWorkerPids.length <= 1 ? [scan.workers] : [])),
  );
  if (shared.size > 0)
    console.log(
      `(with ${[...shared].join(' and ')} workers one process ran the whole scan: scans are not split across workers, so those speed-ups are the machine's load, not scaling, and count as BELOW)`,
    );
}
