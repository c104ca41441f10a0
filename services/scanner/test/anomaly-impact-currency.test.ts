import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { costs, identity } from '@costgov/contracts';
import { captureLogger } from '@costgov/testing';
import { runRulesOverRpc } from '../src/scans/rules-over-rpc';

// A yen-billed connection: 28 days of about 4,000 JPY of usage a day, then a day 6,000 JPY above them
// (+150 %, far beyond 3 deviations of a ±1 % jitter). 6,000 JPY is about 40 USD: a default of "50" read
// as yen would flag it (as high), 50 USD in yen does not.
const first = Date.UTC(2026, 9, 1);
const usage = Array.from({ length: 28 }, (_, day) => 4000 * (1 + 0.01 * Math.sin(day * 2.39)));
const mean = usage.reduce((sum, cost) => sum + cost, 0) / usage.length;
const spike = mean + 6000;
const day = (index: number) => new Date(first + index * 86_400_000).toISOString().slice(0, 10);

function responseIn(currency: string) {
  return create(costs.GetScanDataResponseSchema, {
    windowStart: timestampFromDate(new Date(first)),
    windowEnd: timestampFromDate(new Date(first + 29 * 86_400_000)),
    dataStart: timestampFromDate(new Date(first)),
    dataEnd: timestampFromDate(new Date(first + 29 * 86_400_000)),
    currency,
    daily: [...usage, spike].map((cost, index) => ({
      connectionId: 'con_a',
      day: day(index),
      serviceName: 'Amazon Elastic Compute Cloud',
      serviceCategory: 'Compute',
      effectiveCost: cost,
      usageCost: cost,
    })),
  });
}

async function anomalies(
  currency: string,
  options: { teamImpact?: number; rates?: Array<[string, string, number]> } = {},
) {
  let ratesRead = 0;
  const logger = captureLogger();
  const rules = runRulesOverRpc({
    scanData: { getScanData: async () => responseIn(currency) },
    identityClient: {
      getTeamSettings: async () =>
        create(identity.TeamSettingsSchema, {
          teamId: 'team_a',
          requiredTags: [],
          anomalyMinDailyImpact: options.teamImpact,
        }),
    },
    rates: {
      listRates: async () => {
        ratesRead++;
        return create(costs.ListRatesResponseSchema, {
          rates: (options.rates ?? []).map(([fromCurrency, toCurrency, rate]) => ({
            fromCurrency,
            toCurrency,
            rate,
          })),
        });
      },
    },
    minDailyImpact: 50,
    logger: logger.logger,
    now: () => new Date(first + 30 * 86_400_000),
  });
  const outcome = await rules(
    { teamId: 'team_a', projectId: 'prj_a', scanId: 'scn_a', connectionIds: ['con_a'] },
    () => undefined,
  );
  const found = outcome.results.filter((result) => result.ruleId === 'spend-daily-anomaly');
  return { found, ratesRead, warnings: logger.lines.filter((line) => line.level === 'warn') };
}

describe('the default minimum daily impact of anomalies follows the data currency', () => {
  it('holds back a 6,000 JPY rise by the table default (about 7,500 JPY) when the operator set no rate', async () => {
    const { found, ratesRead } = await anomalies('JPY');
    expect(found).toEqual([]);
    expect(ratesRead).toBe(1);
  });

  it("converts 50 USD with the operator's rate: at 100 JPY a dollar 5,000 JPY, so the rise is flagged", async () => {
    const { found } = await anomalies('JPY', { rates: [['USD', 'JPY', 100]] });
    expect(found.map((result) => result.resourceId)).toEqual(['con_a']);
    expect(found[0]!.description).toContain(day(28));
    // 6,000 over a 5,000 minimum: below three times it, low.
    expect(found[0]!.severity).toBe('low');
    // The inverse of the reverse rate: 1 JPY = 0.005 USD, 50 USD = 10,000 JPY.
    expect((await anomalies('JPY', { rates: [['JPY', 'USD', 0.005]] })).found).toEqual([]);
  });

  it("uses the team's own minimum, in its data's currency, as it is, without reading rates", async () => {
    const { found, ratesRead } = await anomalies('JPY', { teamImpact: 1000 });
    expect(found).toHaveLength(1);
    expect(ratesRead).toBe(0);
  });

  it('keeps 50 for USD data without reading rates, and says so when a currency is unknown', async () => {
    const usd = await anomalies('USD');
    expect(usd.found).toHaveLength(1);
    expect(usd.ratesRead).toBe(0);
    const unknown = await anomalies('XOF');
    expect(unknown.found).toHaveLength(1);
    expect(unknown.warnings).toHaveLength(1);
    expect(unknown.warnings[0]).toMatchObject({ currency: 'XOF', min_daily_impact: 50 });
  });
});
