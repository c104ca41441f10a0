import type { costs, identity } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import type { RpcClient } from '@costgov/rpc';
import { scanProject } from '../rules/scan';
import { defaultMinDailyImpactOverRpc } from './min-daily-impact';
import type { RunRules } from './run-rules';

/**
 * The rule catalogue run over the connections' data from costs, with the team's required tag keys and
 * minimum daily impact of an anomaly from identity. A team that set none gets the scanner's default
 * (ANOMALY_MIN_DAILY_IMPACT, in US dollars) in its data's currency: with the operator's exchange rates
 * from costs, else an approximate table of common currencies, else as is (logged). Costs or identity
 * down rejects with UnavailableError, which the worker retries.
 */
export function runRulesOverRpc({
  scanData,
  identityClient,
  now,
  minDailyImpact = 50,
  rates,
  logger,
}: {
  scanData: Pick<RpcClient<typeof costs.ScanDataService>, 'getScanData'>;
  identityClient: Pick<RpcClient<typeof identity.IdentityService>, 'getTeamSettings'>;
  now: () => Date;
  /**
   * Least daily rise over its baseline an anomaly needs when the team set none, in US dollars
   * (ANOMALY_MIN_DAILY_IMPACT).
   */
  minDailyImpact?: number;
  /** Costs' RatesService: the operator's exchange rates, read only for data in another currency. */
  rates?: Pick<RpcClient<typeof costs.RatesService>, 'listRates'>;
  logger?: Pick<Logger, 'warn'>;
}): RunRules {
  return async (work, progress) => {
    const settings = await identityClient.getTeamSettings({}, { teamId: work.teamId });
    // Every page of the data is read (a page that cannot be read rejects the scan, which is retried), so
    // the resources recorded as dealt with are all of them.
    const outcome = await scanProject(
      { scanData },
      {
        teamId: work.teamId,
        projectId: work.projectId,
        connectionIds: work.connectionIds,
        requiredTags: settings.requiredTags,
        now: now(),
        // The team's own minimum (in its data's currency), else the scanner's in the data's currency.
        minDailyImpact:
          settings.anomalyMinDailyImpact ??
          (async (currency: string) => {
            const impact = await defaultMinDailyImpactOverRpc(rates, currency, minDailyImpact);
            if (impact.basis === 'unconverted')
              logger?.warn(
                { team_id: work.teamId, currency, min_daily_impact: impact.amount },
                "no exchange rate from USD for the data's currency: the default minimum daily impact of anomalies is used as is",
              );
            return impact.amount;
          }),
      },
    );
    progress(outcome.resourcesScanned);
    return {
      resourcesScanned: outcome.resourcesScanned,
      results: outcome.results,
      resourceIds: outcome.resourceIds,
    };
  };
}
