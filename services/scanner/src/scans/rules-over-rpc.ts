import type { costs, identity } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { scanProject } from '../rules/scan';
import type { RunRules } from './run-rules';

/**
 * The rule catalogue run over the connections' data from costs, with the team's required tag keys from
 * identity. Costs or identity down rejects with UnavailableError, which the worker retries.
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
  /** Least daily rise over the baseline the anomaly rules flag (ANOMALY_MIN_DAILY_IMPACT). */
  minDailyImpact?: number;
}): RunRules {
  return async (work, progress) => {
    const { requiredTags } = await identityClient.getTeamSettings({}, { teamId: work.teamId });
    const outcome = await scanProject(
      { scanData },
      {
        teamId: work.teamId,
        projectId: work.projectId,
        connectionIds: work.connectionIds,
        requiredTags,
        now: now(),
        minDailyImpact,
      },
    );
    progress(outcome.resourcesScanned);
    return { resourcesScanned: outcome.resourcesScanned, results: outcome.results };
  };
}
