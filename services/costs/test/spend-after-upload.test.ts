import { readFileSync } from 'node:fs';
import path from 'node:path';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { uploadParts, usageBased } from '@costgov/testing';
import { focusLines } from '../src/cost-data/generate';
import { startCosts, type CostsUnderTest } from './fixture';

const as = { teamId: newId('team') };
const sample = readFileSync(path.resolve(__dirname, '../../../data/focus/focus_sample_1000.csv'));

let costsService: CostsUnderTest;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;

beforeAll(async () => {
  costsService = await startCosts();
  ({ connections, costData } = costsService.clients);
}, 30_000);

afterAll(() => costsService?.stop());

interface Row {
  day: string;
  period: string;
  currency: string;
  effective: number;
  tags: Record<string, string>;
  /** The forecast's split, by the test kit's own reading of the rule (docs/decisions.md). */
  usage: boolean;
  category: string;
  frequency: string;
  /** False for a row without a ResourceId or whose ChargeCategory is Tax, Credit, Purchase or Adjustment. */
  taggable: boolean;
}

/** The file's rows as the test reads them itself: charge day (UTC), currency, EffectiveCost, tags. */
function rowsOf(file: Buffer): Row[] {
  const records = parse(file, { columns: true, bom: true }) as Record<string, string>[];
  return records.map((record) => ({
    day: record.ChargePeriodStart!.slice(0, 10),
    period: record.BillingPeriodStart!.slice(0, 7),
    currency: record.BillingCurrency!,
    effective: Number(record.EffectiveCost),
    tags: record.Tags === 'NULL' || !record.Tags ? {} : (JSON.parse(record.Tags) as Record<string, string>),
    usage: usageBased(record.ChargeCategory, record.ChargeFrequency),
    category: record.ChargeCategory ?? '',
    frequency: record.ChargeFrequency ?? '',
    taggable:
      !['', 'NULL', undefined].includes(record.ResourceId) &&
      !['Tax', 'Credit', 'Purchase', 'Adjustment'].includes(record.ChargeCategory!),
  }));
}

const sum = (rows: Row[]) => rows.reduce((total, row) => total + row.effective, 0);
const range = (from: string, to: string) => ({
  from: timestampFromDate(new Date(`${from}T00:00:00Z`)),
  to: timestampFromDate(new Date(`${to}T00:00:00Z`)),
});

describe('spend of uploaded FOCUS files, read from the rollups', () => {
  it('sums the sample file per range and tags as the file itself does, and follows a re-upload', async () => {
    const connectionId = (await connections.createConnection({ name: 'sample', provider: 'aws' }, as)).id;
    await costData.uploadCostData(uploadParts(connectionId, sample), as);
    const rows = rowsOf(sample);
    const september = range('2024-09-01', '2024-10-01');

    const all = await costData.getSpend({ connectionIds: [connectionId], ...september, currency: 'USD' }, as);
    expect(all.byCurrency.map((c) => c.currency)).toEqual(['USD']);
    expect(all.byCurrency[0]!.amount).toBeCloseTo(sum(rows), 8);
    expect(all.converted).toBeCloseTo(sum(rows), 8);
    // The sample writes 'Usage-based' beside 'Usage-Based': its usage rows count whatever the case, its
    // adjustments marked 'Usage-based' and its one-time credit do not.
    const kinds = (usage: boolean) =>
      new Set(rows.filter((row) => row.usage === usage).map((row) => `${row.category}/${row.frequency}`));
    expect(kinds(true)).toEqual(new Set(['Usage/Usage-Based', 'Usage/Usage-based']));
    expect(kinds(false)).toEqual(new Set(['Adjustment/Usage-based', 'Credit/One-Time']));
    expect(all.usageConverted).toBeCloseTo(sum(rows.filter((row) => row.usage)), 8);
    expect(all.lastUsageDay).toBe(
      rows
        .filter((row) => row.usage)
        .map((row) => row.day)
        .sort()
        .at(-1),
    );
    expect(all.lastChargeDay).toBe(
      rows
        .map((row) => row.day)
        .sort()
        .at(-1),
    );

    const firstWeek = await costData.getSpend(
      { connectionIds: [connectionId], ...range('2024-09-01', '2024-09-08') },
      as,
    );
    expect(firstWeek.byCurrency[0]!.amount).toBeCloseTo(sum(rows.filter((row) => row.day < '2024-09-08')), 8);

    const prod = await costData.getSpend(
      { connectionIds: [connectionId], ...september, tags: { environment: 'prod' } },
      as,
    );
    expect(prod.byCurrency[0]!.amount).toBeCloseTo(
      sum(rows.filter((row) => row.tags.environment === 'prod')),
      8,
    );

    const daily = await costData.getDailySpend({ connectionIds: [connectionId], ...september }, as);
    const days = [...new Set(rows.map((row) => row.day))].sort();
    expect(daily.days.map((d) => d.day)).toEqual(days);
    for (const day of daily.days)
      expect(day.effectiveCost).toBeCloseTo(sum(rows.filter((row) => row.day === day.day)), 8);

    const coverage = await costData.getTagCoverage(
      { connectionIds: [connectionId], ...september, requiredTags: ['application', 'environment'] },
      as,
    );
    // Of the spend that can carry tags: rows without a resource, credits, taxes... are left out, apart.
    const taggable = rows.filter((row) => row.taggable);
    expect(taggable.length).toBeLessThan(rows.length);
    const covered = sum(taggable.filter((row) => row.tags.application && row.tags.environment));
    expect(coverage.covered[0]!.amount).toBeCloseTo(covered, 8);
    expect(coverage.ratio).toBeCloseTo(Math.min(1, covered / sum(taggable)), 8);
    expect(coverage.total[0]!.amount).toBeCloseTo(sum(taggable), 8);
    expect(coverage.untaggable[0]!.amount).toBeCloseTo(sum(rows.filter((row) => !row.taggable)), 8);

    // A generated file of the same billing period replaces it: spend is the new file's, not both.
    const replacement = Buffer.from([...focusLines({ rows: 2000, month: '2024-09', seed: 7 })].join(''));
    await costData.uploadCostData(uploadParts(connectionId, replacement), as);
    const replaced = await costData.getSpend({ connectionIds: [connectionId], ...september }, as);
    // The sample's rows of another billing period (one, of October, charged on September 30) stay.
    const kept = rows.filter((row) => row.period !== '2024-09');
    expect(kept.length).toBeGreaterThan(0);
    expect(replaced.byCurrency[0]!.amount).toBeCloseTo(sum(rowsOf(replacement)) + sum(kept), 6);
  });
});
