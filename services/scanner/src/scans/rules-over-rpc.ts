import type { costs, identity } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import type { RpcClient } from '@costgov/rpc';
import { rulesRunner, type RulesRunner, type ScanSettings } from '../rules/scan';
import { defaultMinDailyImpactOverRpc } from './min-daily-impact';
import { wholeScan, type RunRules } from './run-rules';

interface RulesOverRpcDeps {
  scanData: Pick<RpcClient<typeof costs.ScanDataService>, 'getScanData'>;
  identityClient: Pick<RpcClient<typeof identity.IdentityService>, 'getTeamSettings'>;
  /**
   * Least daily rise over its baseline an anomaly needs when the team set none, in US dollars
   * (ANOMALY_MIN_DAILY_IMPACT).
   */
  minDailyImpact?: number;
  /** Costs' RatesService: the operator's exchange rates, read only for data in another currency. */
  rates?: Pick<RpcClient<typeof costs.RatesService>, 'listRates'>;
  logger?: Pick<Logger, 'warn'>;
}

/**
 * The team's required tag keys and minimum daily impact of an anomaly, from identity. A team that set
 * no minimum gets the scanner's default (ANOMALY_MIN_DAILY_IMPACT, in US dollars) in its data's
 * currency: with the operator's exchange rates from costs, else an approximate table of common
 * currencies, else as is (logged).
 */
function settingsOverRpc({
  identityClient,
  minDailyImpact = 50,
  rates,
  logger,
}: RulesOverRpcDeps): (teamId: string) => Promise<ScanSettings> {
  return async (teamId) => {
    const settings = await identityClient.getTeamSettings({}, { teamId });
    return {
      requiredTags: settings.requiredTags,
      // The team's own minimum (in its data's currency), else the scanner's in the data's currency.
      minDailyImpact:
        settings.anomalyMinDailyImpact ??
        (async (currency: string) => {
          const impact = await defaultMinDailyImpactOverRpc(rates, currency, minDailyImpact);
          if (impact.basis === 'unconverted')
            logger?.warn(
              { team_id: teamId, currency, min_daily_impact: impact.amount },
              "no exchange rate from USD for the data's currency: the default minimum daily impact of anomalies is used as is",
            );
          return impact.amount;
        }),
    };
  };
}

/**
 * The rule catalogue as a sharded scan runs it (rules/engine.ts): `plan` counts the resources of the
 * window and has costs cut them into ranges of resource ids, `runShard` judges one shard's resources page by page with the per-resource rules (one page in
 * memory at a time; its outcome's `pending` holds what the merge must judge: pass every shard's to
 * `runProjectRules`), `runProjectRules` runs the project-wide rules on costs' aggregates and finishes the
 * pending judgements. Costs or identity down rejects with UnavailableError, which the worker retries.
 */
export function scanRunnerOverRpc(deps: RulesOverRpcDeps): RulesRunner {
  return rulesRunner({ scanData: deps.scanData }, settingsOverRpc(deps));
}

/**
 * The rule catalogue run over the connections' data from costs in one piece (one shard, then the
 * project-wide rules: the runner above), with the team's settings from identity. Costs or identity down
 * rejects with UnavailableError, which the worker retries.
 */
export function runRulesOverRpc(deps: RulesOverRpcDeps & { now: () => Date }): RunRules {
  const runner = scanRunnerOverRpc(deps);
  return async (work, progress) => {
    const now = deps.now();
    const { windowEnd, context } = await runner.plan(work, now, () => 1);
    const scan = { ...work, windowEnd, now, context };
    // Every page of the data is read (a page that cannot be read rejects the scan, which is retried), so
    // the resources recorded as dealt with are all of them.
    const shard = await runner.runShard(scan, wholeScan, progress);
    const results = [
      ...shard.results,
      ...(await runner.runProjectRules(scan, shard.pending ? [shard.pending] : [])),
    ];
    progress(shard.resourcesScanned);
    return { resourcesScanned: shard.resourcesScanned, results, resourceIds: shard.resourceIds };
  };
}
