import type { RuleResult } from '../findings/record';

/** What a worker scans: the project's connections as they were when the scan was paid for. */
export interface ScanWork {
  scanId: string;
  teamId: string;
  projectId: string;
  connectionIds: string[];
}

export interface ScanOutcome {
  resourcesScanned: number;
  results: RuleResult[];
  /**
   * Ids of the resources whose cost the scan read; a finding resolved on a resource among them was dealt
   * with, one resolved on any other was only not seen (findings/record.ts). Unknown (none) by default.
   */
  resourceIds?: string[];
}

/**
 * Runs the rule catalogue over the scanned connections' data. `progress` reports resources scanned so
 * far (written with the next heartbeat). Rejecting with an outage (retry.ts) has the scan retried until
 * its retry deadline; any other rejection fails the scan with the error's message.
 */
export type RunRules = (work: ScanWork, progress: (resourcesScanned: number) => void) => Promise<ScanOutcome>;

// ---------------------------------------------------------------------------------------------------
// Sharded scans (issue 19). A scan is planned once (how many resources, which window, which `now`),
// split into `count` shards, each a range of resource ids of about equal size (costs answers the bounds
// and filters GetScanData by range: a shard reads only its own rows), each shard run by any worker with the per-resource rules page by page, then merged once with the project-wide
// rules (computed on costs' aggregates). A scan of few resources is one shard, run by the same code.
// ---------------------------------------------------------------------------------------------------

/** What every shard of one scan shares, fixed when the scan is planned and stored with it. */
export interface PlannedScan extends ScanWork {
  /** End of the data window (exclusive): every shard and the merge read the same window. */
  windowEnd: Date;
  /** The rules' clock for this scan (gone resources, data ends), the same for every shard. */
  now: Date;
  /**
   * What the runner's plan read once for every shard (its `context`, stored with the plan as JSON and
   * handed back unread); unset when it left none.
   */
  context?: unknown;
}

/**
 * One part of a scan, `index` of `count` (0 <= index < count, for progress and order): the resources whose
 * id is at or after `from` and before `to`, in byte order (costs' GetScanData resource_id_from/_to); an
 * unset bound is open on its side. A runner's `plan` makes the shards; the worker stores them and hands
 * each back to `runShard` as planned.
 */
export interface ShardSpec {
  index: number;
  count: number;
  /** First resource id of the shard (inclusive); unset: from the first. */
  from?: string;
  /** Resource id the next shard starts at (exclusive); unset: to the last. */
  to?: string;
}

/** A scan in one shard: every resource. */
export const wholeScan: ShardSpec = { index: 0, count: 1 };

export interface ShardOutcome {
  /** Resources of the shard the rules judged (every page). */
  resourcesScanned: number;
  /** The per-resource rules' findings on the shard's resources, already weighed per resource (rank). */
  results: RuleResult[];
  /** Every resource id of the shard (all pages), for recording which findings the scan dealt with. */
  resourceIds: string[];
  /**
   * What the shard leaves for the merge to judge with the whole scan (runner-defined, stored as JSON with
   * the shard and handed back to `runProjectRules`); none when nothing is left.
   */
  pending?: unknown;
}

/**
 * How a scan is run over costs' data. Rejecting with an outage (retry.ts) has the shard (or the plan, or
 * the merge) retried until the scan's retry deadline; any other rejection fails the scan.
 */
export interface ScanRunner {
  /**
   * How many resources the scan's connections hold in the window, the window's end, and the scan's
   * shards: `shardsFor(resources)` of them (fewer when the runner cannot split further), which together
   * hold every resource exactly once. `mostShards`: the most `shardsFor` answers (SCAN_MAX_SHARDS), so
   * that a runner may have the bounds cut before it knows the count.
   */
  plan(
    work: ScanWork,
    now: Date,
    shardsFor: (resources: number) => number,
    mostShards?: number,
  ): Promise<{ resources: number; windowEnd: Date; shards: ShardSpec[]; context?: unknown }>;
  /** The per-resource rules over one shard, page by page (bounded memory). */
  runShard(
    scan: PlannedScan,
    shard: ShardSpec,
    progress: (resourcesScanned: number) => void,
  ): Promise<ShardOutcome>;
  /**
   * The project-wide rules (tags, unallocated share, anomalies, commitments) on costs' aggregates, with
   * every shard's `pending` (in shard order; those that left none are not there). The worker hands back,
   * unread, what the runner's shards left, so each runner names its own type (`never` here admits any).
   */
  runProjectRules(scan: PlannedScan, pending: readonly never[]): Promise<RuleResult[]>;
}

/** Until the rules are wired: a scan that reads nothing and finds nothing (one shard). */
export const noRulesRunner: ScanRunner = {
  plan: async (_work, now) => ({ resources: 0, windowEnd: now, shards: [wholeScan] }),
  runShard: async () => ({ resourcesScanned: 0, results: [], resourceIds: [] }),
  runProjectRules: async () => [],
};

/** `runner` with a wait of `delayMs` after each shard (a slow shard, for tests and benchmarks). */
export const slowedBy = (runner: ScanRunner, delayMs: number): ScanRunner =>
  delayMs <= 0
    ? runner
    : {
        ...runner,
        runShard: async (scan, shard, progress) => {
          const outcome = await runner.runShard(scan, shard, progress);
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          return outcome;
        },
      };
