import type { costs, identity } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { scanProject } from '../rules/scan';
import type { RunRules } from './run-rules';

/**
 * The rule catalogue run over the connections' data from costs, with the team's required tag keys and
 * minimum daily impact of an anomaly from identity. Costs or identity down rejects with UnavailableError,
 * which the worker retries.
 */
export function runRulesOverRpc({
  scanData,
  identityClient,
  now,
  minDailyImpact,
}: {
  scanData: Pick<RpcClient<typeof costs.ScanDataService>, 'getScanData'>;
  identityClient: Pick<RpcClient<typeof identity.IdentityService>, 'getTeamSettings'>;
  now: () => Date;
  /** Least daily rise over its baseline an anomaly needs when the team set none (ANOMALY_MIN_DAILY_IMPACT). */
  minDailyImpact?: number;
}): RunRules {
  return async (work, progress) => {
    const settings = await identityClient.getTeamSettings({}, { teamId: work.teamId });
    // The resources costs answered with, kept for recording which findings were dealt with.
    let resourceIds: string[] = [];
    const reading: typeof scanData = {
      getScanData: async (...args) => {
        const answer = await scanData.getScanData(...args);
        resourceIds = answer.resources.map((resource) => resource.resourceId);
        return answer;
      },
    };
    const outcome = await scanProject(
      { scanData: reading },
      {
        teamId: work.teamId,
        projectId: work.projectId,
        connectionIds: work.connectionIds,
        requiredTags: settings.requiredTags,
        now: now(),
        // The team's own minimum, else the scanner's (ANOMALY_MIN_DAILY_IMPACT).
        minDailyImpact: settings.anomalyMinDailyImpact ?? minDailyImpact,
      },
    );
    progress(outcome.resourcesScanned);
    return { resourcesScanned: outcome.resourcesScanned, results: outcome.results, resourceIds };
  };
}
