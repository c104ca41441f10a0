import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { uploadParts } from '@costgov/testing';
import { focusLines } from '../src/cost-data/generate';
import { startCosts, type CostsUnderTest } from './fixture';

const as = { teamId: newId('team') };
const setup = process.env.DATABASE_URL ? 'postgres' : 'pglite';

let costsService: CostsUnderTest;
let db: Db;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;
let scanData: RpcClient<typeof costs.ScanDataService>;

beforeAll(async () => {
  costsService = await startCosts();
  ({ db } = costsService);
  ({ connections, costData } = costsService.clients);
  scanData = costsService.client(costs.ScanDataService, { deadlineMs: 60_000 });
}, 30_000);

afterAll(() => costsService?.stop());

const newConnection = async () =>
  (await connections.createConnection({ name: `aws-${newId('event')}`, provider: 'aws' }, as)).id;

/** The UTC day of an instant written with an offset, computed here by Date (not by the reader). */
const utcDay = (instant: string) => new Date(instant).toISOString().slice(0, 10);

/**
 * A generated file of `month` whose BillingPeriodStart and BillingPeriodEnd carry `offset` (the period
 * starts at local midnight of the 1st), with what the test reads out of it: its rows, BilledCost and
 * EffectiveCost sums per UTC period day.
 */
function file(month: string, offset: string, seed: number) {
  const lines = [...focusLines({ rows: 300, month, seed })];
  const [year, m] = month.split('-').map(Number) as [number, number];
  const next = new Date(Date.UTC(year, m, 1)).toISOString().slice(0, 10);
  const plain = { start: `${month}-01 00:00:00`, end: `${next} 00:00:00` };
  const zoned = { start: `${month}-01T00:00:00${offset}`, end: `${next}T00:00:00${offset}` };
  // BillingPeriodEnd then BillingPeriodStart, side by side in the generator's header.
  const header = lines[0]!.split(',');
  expect(header.indexOf('BillingPeriodStart')).toBe(header.indexOf('BillingPeriodEnd') + 1);
  const body = lines
    .map((line, i) =>
      i === 0 ? line : line.replace(`,${plain.end},${plain.start},`, `,${zoned.end},${zoned.start},`),
    )
    .join('');
  const records = parse(body, { columns: true }) as Record<string, string>[];
  expect(records.every((record) => record.BillingPeriodStart === zoned.start)).toBe(true);
  return {
    body,
    rows: records.length,
    period: utcDay(zoned.start),
    billed: records.reduce((sum, record) => sum + Number(record.BilledCost), 0),
    effective: records.reduce((sum, record) => sum + Number(record.EffectiveCost), 0),
  };
}
type File = ReturnType<typeof file>;

/** Files joined into one upload (every header but the first left out). */
const joined = (files: File[]) => ({
  body: files.map((f, i) => (i === 0 ? f.body : f.body.slice(f.body.indexOf('\n') + 1))).join(''),
  files,
});

/** What the raw rows hold per period, as the database counts them. */
async function stored(connectionId: string) {
  const { rows } = await db.query<{ period: string; rows: number; billed: number }>(
    `SELECT to_char(billing_period_start, 'YYYY-MM-DD') AS period, count(*)::int AS rows,
       sum(billed_cost)::float8 AS billed
     FROM cost_records WHERE connection_id = $1 GROUP BY 1 ORDER BY 1`,
    [connectionId],
  );
  return rows.map((row) => ({ period: row.period, rows: Number(row.rows), billed: Number(row.billed) }));
}

/** A scan over the files' months: records and effective cost of the connection. */
async function scanned(connectionId: string, until: Date) {
  const page = await scanData.getScanData(
    { connectionIds: [connectionId], until: timestampFromDate(until), days: 120 },
    as,
  );
  const totals = page.totals.find((t) => t.connectionId === connectionId);
  return { records: Number(totals?.records ?? 0), effective: totals?.effectiveCost ?? 0 };
}

async function spend(connectionId: string, from: Date, to: Date) {
  const answer = await costData.getSpend(
    { connectionIds: [connectionId], from: timestampFromDate(from), to: timestampFromDate(to) },
    as,
  );
  return answer.byCurrency.find((amount) => amount.currency === 'USD')?.amount ?? 0;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe(`billing periods written with a UTC offset (${setup})`, () => {
  for (const offset of ['+02:00', '-05:00']) {
    it(`one period with ${offset}: stored under its UTC day, restated, scanned and spent in full`, async () => {
      const connectionId = await newConnection();
      const first = file('2026-03', offset, 1);
      const restated = file('2026-03', offset, 2);
      expect(first.period).toBe(utcDay(`2026-03-01T00:00:00${offset}`));
      for (const f of [first, restated]) {
        const summary = await costData.uploadCostData(uploadParts(connectionId, f.body), as);
        expect(summary.rows).toBe(BigInt(f.rows));
        expect(summary.billingPeriods).toEqual([f.period]);
        expect(summary.totals[0]!.billedCost).toBeCloseTo(f.billed, 6);
      }
      expect(await stored(connectionId)).toEqual([
        { period: restated.period, rows: restated.rows, billed: expect.closeTo(restated.billed, 6) },
      ]);
      const { rows: rollups } = await db.query<{ period: string; records: number }>(
        `SELECT to_char(billing_period_start, 'YYYY-MM-DD') AS period, sum(records)::int AS records
         FROM daily_spend WHERE connection_id = $1 GROUP BY 1`,
        [connectionId],
      );
      expect(rollups).toEqual([{ period: restated.period, records: restated.rows }]);
      const scan = await scanned(connectionId, new Date('2026-04-15T00:00:00Z'));
      expect(scan.records).toBe(restated.rows);
      expect(scan.effective).toBeCloseTo(restated.effective, 6);
      const spent = await spend(
        connectionId,
        new Date('2026-02-01T00:00:00Z'),
        new Date('2026-05-01T00:00:00Z'),
      );
      expect(spent).toBeCloseTo(restated.effective, 6);
    });

    it(`several periods with ${offset}: each split into its partition, restated, scanned in full`, async () => {
      const connectionId = await newConnection();
      const first = joined([file('2026-03', offset, 3), file('2026-04', offset, 4)]);
      const restated = joined([file('2026-03', offset, 5), file('2026-04', offset, 6)]);
      for (const upload of [first, restated]) {
        const summary = await costData.uploadCostData(uploadParts(connectionId, upload.body), as);
        expect(summary.rows).toBe(BigInt(sum(upload.files.map((f) => f.rows))));
        expect(summary.billingPeriods).toEqual(upload.files.map((f) => f.period));
      }
      expect(await stored(connectionId)).toEqual(
        restated.files.map((f) => ({ period: f.period, rows: f.rows, billed: expect.closeTo(f.billed, 6) })),
      );
      const { rows: periods } = await db.query<{ period: string; rows: number }>(
        `SELECT to_char(billing_period_start, 'YYYY-MM-DD') AS period, rows::int FROM cost_record_periods
         WHERE connection_id = $1 ORDER BY 1`,
        [connectionId],
      );
      expect(periods).toEqual(restated.files.map((f) => ({ period: f.period, rows: f.rows })));
      const scan = await scanned(connectionId, new Date('2026-05-15T00:00:00Z'));
      expect(scan.records).toBe(sum(restated.files.map((f) => f.rows)));
      expect(scan.effective).toBeCloseTo(sum(restated.files.map((f) => f.effective)), 6);
      const spent = await spend(
        connectionId,
        new Date('2026-02-01T00:00:00Z'),
        new Date('2026-06-01T00:00:00Z'),
      );
      expect(spent).toBeCloseTo(sum(restated.files.map((f) => f.effective)), 6);
    });
  }
});
