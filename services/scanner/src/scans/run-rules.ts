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

/** Until the rules are wired: a scan that reads nothing and finds nothing. */
export const runNoRules: RunRules = async () => ({ resourcesScanned: 0, results: [] });

/** `run` followed by a wait of `delayMs` (a slow scan, for tests and benchmarks). */
export const slowedBy = (run: RunRules, delayMs: number): RunRules =>
  delayMs <= 0
    ? run
    : async (work, progress) => {
        const outcome = await run(work, progress);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        return outcome;
      };
