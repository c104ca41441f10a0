import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus, CloudEvent } from '@costgov/bus';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { costs } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { eventually, recordLines, uploadParts } from '@costgov/testing';
import { focusLines, type GenerateOptions } from '../src/cost-data/generate';
import { startCosts, type CostsUnderTest } from './fixture';

const asA = { teamId: newId('team') };
const asB = { teamId: newId('team') };
const samplePath = path.resolve(__dirname, '../../../data/focus/focus_sample_1000.csv');
const sample = readFileSync(samplePath);

let costsService: CostsUnderTest;
let db: Db;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;
let bus: Bus;
const received: CloudEvent[] = [];

beforeAll(async () => {
  costsService = await startCosts();
  ({ db, bus } = costsService);
  ({ connections, costData } = costsService.clients);
  await bus.consume({
    durable: 'costs_data_test_observer',
    types: ['costs.data.>'],
    handler: async (event) => {
      received.push(event);
    },
  });
}, 30_000);

afterAll(() => costsService?.stop());

async function newConnection(as = asA): Promise<string> {
  const name = `aws-${Math.random().toString(36).slice(2)}`;
  return (await connections.createConnection({ name, provider: 'aws' }, as)).id;
}

const upload = (connectionId: string, body: Uint8Array, encoding = 'identity', as = asA) =>
  costData.uploadCostData(uploadParts(connectionId, body, encoding), as);

const generated = (options: GenerateOptions) => Buffer.from([...focusLines(options)].join(''));

/** Sums per currency the test works out from the file itself. */
function fileTotals(file: Buffer) {
  const records = parse(file, { columns: true, bom: true }) as Record<string, string>[];
  const totals = new Map<string, { billed: number; effective: number }>();
  for (const record of records) {
    const entry = totals.get(record.BillingCurrency!) ?? { billed: 0, effective: 0 };
    entry.billed += Number(record.BilledCost);
    entry.effective += Number(record.EffectiveCost);
    totals.set(record.BillingCurrency!, entry);
  }
  return { rows: records.length, records, totals };
}

function expectTotals(summary: costs.IngestSummary, file: Buffer) {
  const expected = fileTotals(file);
  expect(Number(summary.rows)).toBe(expected.rows);
  expect(summary.totals.map((total) => total.currency).sort()).toEqual([...expected.totals.keys()].sort());
  for (const total of summary.totals) {
    const sums = expected.totals.get(total.currency)!;
    expect(total.billedCost).toBeCloseTo(sums.billed, 6);
    expect(total.effectiveCost).toBeCloseTo(sums.effective, 6);
  }
}

/** What is stored for a connection: raw rows and their sums, rollup sums. */
async function stored(connectionId: string) {
  const { rows: raw } = await db.query<{ rows: number; billed: number; effective: number }>(
    `SELECT count(*)::int AS rows, coalesce(sum(billed_cost), 0) AS billed, coalesce(sum(effective_cost), 0) AS effective
     FROM cost_records WHERE connection_id = $1`,
    [connectionId],
  );
  const { rows: rolled } = await db.query<{ records: number; billed: number; effective: number }>(
    `SELECT coalesce(sum(records), 0)::int AS records, coalesce(sum(billed_cost), 0) AS billed,
       coalesce(sum(effective_cost), 0) AS effective FROM daily_spend WHERE connection_id = $1`,
    [connectionId],
  );
  return { raw: raw[0]!, rollups: rolled[0]! };
}

async function stagingTables(): Promise<string[]> {
  const { rows } = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'cost_staging_%'`,
  );
  return rows.map((row) => row.table_name);
}

const ingestedEvents = (connectionId: string) =>
  received.filter((event) => event.type === 'costs.data.ingested' && event.subject === connectionId);

async function refusal(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describe(`FOCUS upload (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${process.env.NATS_URL ? 'nats' : 'in-process bus'})`, () => {
  it('stores the sample export: totals match sums of the file, rollups match raw rows, one event', async () => {
    const connectionId = await newConnection();
    const summary = await upload(connectionId, sample);
    expectTotals(summary, sample);
    expect(summary.focusVersion).toBe('1.0');
    expect(summary.connectionId).toBe(connectionId);
    expect(summary.billingPeriods).toEqual(
      [...new Set(fileTotals(sample).records.map((r) => r.BillingPeriodStart!.slice(0, 10)))].sort(),
    );
    expect(Number(summary.rowsReplaced)).toBe(0);
    expect(Number(summary.bytes)).toBe(sample.length);

    const { raw, rollups } = await stored(connectionId);
    expect(raw.rows).toBe(1000);
    expect(rollups.records).toBe(1000);
    expect(rollups.billed).toBeCloseTo(raw.billed, 9);
    expect(rollups.effective).toBeCloseTo(raw.effective, 9);

    // Per day, billing period, currency and tag set too: every rollup row is the sum of its raw rows.
    const { rows: mismatches } = await db.query(
      `SELECT r.day FROM (
         SELECT (charge_period_start AT TIME ZONE 'UTC')::date AS day, billing_period_start AS period,
           billing_currency AS currency, coalesce(tags, '{}') AS tags,
           sum(effective_cost) AS effective, count(*)::int AS records
         FROM cost_records WHERE connection_id = $1 GROUP BY 1, 2, 3, 4) r
       FULL JOIN (
         SELECT day, billing_period_start AS period, billing_currency AS currency, tags,
           sum(effective_cost) AS effective, sum(records)::int AS records
         FROM daily_spend WHERE connection_id = $1 GROUP BY 1, 2, 3, 4) d
       ON r.day = d.day AND r.period = d.period AND r.currency = d.currency AND r.tags = d.tags
       WHERE r.effective IS DISTINCT FROM d.effective OR r.records IS DISTINCT FROM d.records`,
      [connectionId],
    );
    expect(mismatches).toEqual([]);

    // ChargeFrequency is stored in the specification's spelling (the sample has 'Usage-based' beside
    // 'Usage-Based'), so that every query compares it exactly.
    const spelling = new Map(
      ['One-Time', 'Recurring', 'Usage-Based'].map((value) => [value.toLowerCase(), value]),
    );
    const frequencies = new Map<string, number>();
    for (const record of fileTotals(sample).records) {
      const given = record.ChargeFrequency!;
      const key = given === 'NULL' ? 'null' : (spelling.get(given.toLowerCase()) ?? given);
      frequencies.set(key, (frequencies.get(key) ?? 0) + 1);
    }
    const { rows: kept } = await db.query<{ frequency: string | null; records: number }>(
      `SELECT charge_frequency AS frequency, count(*)::int AS records FROM cost_records
       WHERE connection_id = $1 GROUP BY 1`,
      [connectionId],
    );
    expect(new Map(kept.map((row) => [row.frequency ?? 'null', row.records]))).toEqual(frequencies);

    const connection = await connections.getConnection({ id: connectionId }, asA);
    expect(connection.lastIngestedAt).toBeDefined();
    await eventually(() => (ingestedEvents(connectionId).length > 0 ? true : undefined));
    const event = ingestedEvents(connectionId)[0]!;
    expect(event.data).toMatchObject({
      connectionId,
      teamId: asA.teamId,
      billingPeriods: summary.billingPeriods,
      firstChargeDay: '2024-09-01',
      lastChargeDay: '2024-09-30',
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(ingestedEvents(connectionId)).toHaveLength(1);
    expect(await stagingTables()).toEqual([]);
  });

  it('replaces a billing period uploaded again (gzip), not doubling it', async () => {
    const connectionId = await newConnection();
    const first = await upload(connectionId, sample);
    expect(first.warnings.map((w) => w.code)).not.toContain('replaced_recent_upload');
    const again = await upload(connectionId, gzipSync(sample), 'gzip');
    expect(Number(again.rowsReplaced)).toBe(1000);
    expectTotals(again, sample);
    const { raw, rollups } = await stored(connectionId);
    expect(raw.rows).toBe(1000);
    expect(rollups.records).toBe(1000);
    // Stored moments before by another upload: the parts of one export sent one by one would do that.
    const { rows: uploads } = await db.query<{ id: string }>(
      `SELECT id FROM cost_uploads WHERE connection_id = $1 AND status = 'stored' ORDER BY finished_at`,
      [connectionId],
    );
    const periods = [...new Set(fileTotals(sample).records.map((r) => r.BillingPeriodStart!.slice(0, 10)))]
      .sort()
      .join(', ');
    expect(periods).toMatch(/^2024-09-01, /); // the sample holds more than one period
    expect(again.warnings.filter((w) => w.code === 'replaced_recent_upload')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          new RegExp(`^Billing periods ${periods} stored by another upload \\d+ s ago`),
        ),
        details: { billing_periods: periods, upload_id: uploads[0]!.id, seconds: expect.any(String) },
      }),
    ]);
    // Another period of the same connection is left alone.
    const october = generated({ rows: 50, month: '2024-11', seed: 5, version: '1.0' });
    const other = await upload(connectionId, october);
    expect(other.warnings.map((w) => w.code)).not.toContain('replaced_recent_upload');
    expect((await stored(connectionId)).raw.rows).toBe(1050);
    // A day's restatement comes long after: stored 16 minutes ago is not recent.
    await db.query(
      `UPDATE cost_uploads SET finished_at = finished_at - interval '16 minutes' WHERE connection_id = $1`,
      [connectionId],
    );
    const third = await upload(connectionId, sample);
    expect(Number(third.rowsReplaced)).toBe(1000);
    expect(third.warnings.map((w) => w.code)).not.toContain('replaced_recent_upload');
    expect((await stored(connectionId)).raw.rows).toBe(1050);
  });

  it('reads a generated FOCUS 1.2 file with extra columns and ISO timestamps', async () => {
    const connectionId = await newConnection();
    const file = generated({
      rows: 3000,
      month: '2025-02',
      seed: 7,
      version: '1.2',
      currency: 'EUR',
      timestamps: 'iso',
      extraColumns: ['x_CostCenter', 'x_Discounts'],
    });
    const summary = await upload(connectionId, file);
    expect(summary.focusVersion).toBe('1.2');
    expect(summary.billingPeriods).toEqual(['2025-02-01']);
    expectTotals(summary, file);
    expect((await stored(connectionId)).raw.rows).toBe(3000);
  });

  describe('FOCUS 1.3 and what the specification allows', () => {
    /** A JSON value with its keys sorted at every level, as text: jsonb reorders keys. */
    const canonical = (value: unknown): string =>
      JSON.stringify(value, (_key, inner: unknown) =>
        inner && typeof inner === 'object' && !Array.isArray(inner)
          ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a.localeCompare(b)))
          : inner,
      );
    const kept = [
      ['charge_frequency', 'ChargeFrequency', false],
      ['service_provider_name', 'ServiceProviderName', false],
      ['host_provider_name', 'HostProviderName', false],
      ['contract_applied', 'ContractApplied', true],
      ['allocated_method_id', 'AllocatedMethodId', false],
      ['allocated_method_details', 'AllocatedMethodDetails', true],
      ['allocated_resource_id', 'AllocatedResourceId', false],
      ['allocated_resource_name', 'AllocatedResourceName', false],
      ['allocated_tags', 'AllocatedTags', true],
    ] as const;

    it('round-trips a generated 1.3 file: totals, version, billing periods and the new columns kept', async () => {
      const connectionId = await newConnection();
      const file = generated({ rows: 3000, month: '2025-03', seed: 13, version: '1.3', timestamps: 'iso' });
      const { records } = fileTotals(file);
      // The generator follows 1.3: the deprecated provider columns are gone, their successors there.
      expect(Object.keys(records[0]!)).not.toContain('ProviderName');
      expect(Object.keys(records[0]!)).not.toContain('PublisherName');
      const summary = await upload(connectionId, file);
      expect(summary.focusVersion).toBe('1.3');
      expectTotals(summary, file);
      const pairs = [...new Set(records.map((r) => `${r.BillingPeriodStart}/${r.BillingPeriodEnd}`))];
      expect(
        summary.billingPeriodRanges.map(
          (range) =>
            `${timestampDate(range.start!).toISOString()}/${timestampDate(range.end!).toISOString()}`,
        ),
      ).toEqual(pairs.map((pair) => pair.replaceAll('Z', '.000Z')));
      expect(summary.warnings).toEqual([]);

      for (const [column, focus, json] of kept) {
        const { rows } = await db.query<{ value: string | null }>(
          `SELECT ${column}${json ? '::text' : ''} AS value FROM cost_records WHERE connection_id = $1`,
          [connectionId],
        );
        const read = (value: string | null | undefined) =>
          value === null || value === undefined || value === 'NULL' || value === ''
            ? 'null'
            : json
              ? canonical(JSON.parse(value))
              : value;
        const fromFile = records.map((record) => read(record[focus])).sort();
        expect(fromFile.filter((value) => value !== 'null').length, focus).toBeGreaterThan(0);
        expect(rows.map((row) => read(row.value)).sort(), column).toEqual(fromFile);
      }
      // provider_name, what rules read, comes from ServiceProviderName when ProviderName is absent.
      const { rows: providers } = await db.query<{ provider: string | null; records: number }>(
        `SELECT provider_name AS provider, count(*)::int AS records FROM cost_records
         WHERE connection_id = $1 GROUP BY 1`,
        [connectionId],
      );
      expect(providers).toEqual([{ provider: records[0]!.ServiceProviderName, records: records.length }]);
    });

    it('reads null in lower case and empty fields as null, and a virtual PricingCurrency', async () => {
      const connectionId = await newConnection();
      const file = generated({ rows: 200, month: '2025-05', seed: 3, version: '1.2' });
      // Written again from its fields: NULL as null on even rows and as an empty field on odd ones,
      // other fields quoted, PricingCurrency a virtual currency.
      const [columns, ...rows] = parse(file) as string[][];
      const pricing = columns!.indexOf('PricingCurrency');
      const line = (fields: string[], index: number) =>
        fields
          .map((field, at) =>
            at === pricing
              ? 'Token'
              : field === 'NULL'
                ? index % 2
                  ? ''
                  : 'null'
                : `"${field.replaceAll('"', '""')}"`,
          )
          .join(',');
      const withToken = [columns!.join(','), ...rows.map(line)].join('\n') + '\n';
      const body = Buffer.from(withToken);
      const parsed = fileTotals(body);
      expect(parsed.records.every((record) => record.PricingCurrency === 'Token')).toBe(true);
      expect(parsed.records.some((record) => record.ChargeClass === 'null')).toBe(true);
      const summary = await upload(connectionId, body);
      expectTotals(summary, body);
      const { rows: nullClasses } = await db.query<{ nulls: number }>(
        `SELECT count(*)::int AS nulls FROM cost_records WHERE connection_id = $1 AND charge_class IS NULL`,
        [connectionId],
      );
      expect(nullClasses[0]!.nulls).toBe(
        parsed.records.filter((r) => ['null', 'NULL', ''].includes(r.ChargeClass!)).length,
      );
    });

    it('takes tag values FOCUS allows besides text (numbers, true, false, null) and stores them as text', async () => {
      const connectionId = await newConnection();
      const tags = { app: 'web', replicas: 3, ratio: -0.25, spot: true, legacy: false, owner: null };
      const lines = sample.toString('utf8').split('\n');
      const header = parse(lines[0]!)[0] as string[];
      const fields = (parse(lines[1]!)[0] as string[]).map((f) =>
        f === 'NULL' ? f : `"${f.replaceAll('"', '""')}"`,
      );
      fields[header.indexOf('Tags')] = `"${JSON.stringify(tags).replaceAll('"', '""')}"`;
      const body = Buffer.from([lines[0], fields.join(',')].join('\n') + '\n');
      expect(Number((await upload(connectionId, body)).rows)).toBe(1);
      const { rows } = await db.query<{ tags: Record<string, string> }>(
        `SELECT tags FROM cost_records WHERE connection_id = $1`,
        [connectionId],
      );
      const asText = Object.fromEntries(
        Object.entries(tags).map(([key, value]) => [key, value === null ? '' : String(value)]),
      );
      expect(rows).toEqual([{ tags: asText }]);
    });

    it('warns of rows charged in the future: how many and the latest', async () => {
      const connectionId = await newConnection();
      const month = new Date(Date.now() + 40 * 86_400_000).toISOString().slice(0, 7);
      const file = generated({ rows: 100, month, seed: 4, version: '1.2', timestamps: 'iso' });
      const { records } = fileTotals(file);
      const starts = records
        .map((r) => r.ChargePeriodStart!)
        .filter((start) => Date.parse(start) > Date.now());
      const summary = await upload(connectionId, file);
      expectTotals(summary, file);
      expect(summary.warnings).toEqual([
        expect.objectContaining({
          code: 'future_charges',
          details: expect.objectContaining({
            rows: String(starts.length),
            latest_charge_period_start: starts.sort().at(-1),
          }),
        }),
      ]);
      expect(summary.warnings[0]!.message).toContain(`${starts.length} rows are charged in the future`);
    });
  });

  it('stores ChargeCategory and ChargeFrequency in the specification spelling, other values as given', async () => {
    const connectionId = await newConnection();
    const header =
      'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,ChargeCategory,ChargeFrequency';
    const given = [
      ['tax', 'recurring'],
      ['USAGE', 'usage-based'],
      ['Credit', 'One-Time'],
      ['Refund', 'Hourly'],
    ];
    const lines = given.map(
      ([category, frequency], i) =>
        `1,1,USD,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,2025-03-02T00:00:00Z,2025-03-02T01:00:00Z,EC2,i-${i},${category},${frequency}`,
    );
    await upload(connectionId, Buffer.from(`${header}\n${lines.join('\n')}\n`));
    const { rows } = await db.query<{
      resource_id: string;
      charge_category: string;
      charge_frequency: string;
    }>(
      'SELECT resource_id, charge_category, charge_frequency FROM cost_records WHERE connection_id = $1 ORDER BY resource_id',
      [connectionId],
    );
    expect(rows.map((row) => [row.charge_category, row.charge_frequency])).toEqual([
      ['Tax', 'Recurring'],
      ['Usage', 'Usage-Based'],
      ['Credit', 'One-Time'],
      ['Refund', 'Hourly'],
    ]);
  });

  it('detects FOCUS 1.1 from its columns', async () => {
    const connectionId = await newConnection();
    const file = generated({ rows: 10, month: '2025-01', version: '1.1' });
    expect((await upload(connectionId, file)).focusVersion).toBe('1.1');
  });

  describe('refuses a bad file with row and column, leaving stored data as it was', () => {
    let connectionId: string;
    let before: Awaited<ReturnType<typeof stored>>;
    const lines = sample.toString('utf8').split('\n');
    const header = lines[0]!.split(',').map((name) => name.replaceAll('"', ''));
    /** The sample with one field of one data row (row 2 is the first) replaced as CSV text. */
    const withField = (row: number, column: string, text: string) => {
      const copy = [...lines];
      const fields = parse(copy[row - 1]!)[0] as string[];
      const quoted = fields.map((f) => (f === 'NULL' ? f : `"${f.replaceAll('"', '""')}"`));
      quoted[header.indexOf(column)] = text;
      copy[row - 1] = quoted.join(',');
      return Buffer.from(copy.join('\n'));
    };

    /** A generated FOCUS 1.3 file with one field of one data row replaced as CSV text. */
    const with13Field = (row: number, column: string, text: string) => {
      const [columns, ...rows] = parse(
        generated({ rows: 20, month: '2024-09', seed: 2, version: '1.3' }),
      ) as string[][];
      const quote = (field: string) => (field === 'NULL' ? field : `"${field.replaceAll('"', '""')}"`);
      const lines = [columns!.join(','), ...rows.map((fields) => fields.map(quote).join(','))];
      expect(columns!.indexOf(column)).toBeGreaterThan(0);
      const record = rows[row - 2]!.map(quote);
      record[columns!.indexOf(column)] = text;
      lines[row - 1] = record.join(',');
      return Buffer.from(lines.join('\n') + '\n');
    };

    beforeAll(async () => {
      connectionId = await newConnection();
      await upload(connectionId, sample);
      before = await stored(connectionId);
    });

    const cases: Array<[string, () => Buffer, string, RegExp]> = [
      [
        'a header without BilledCost',
        () => Buffer.from(sample.toString('utf8').replace('"BilledCost"', '"Billed"')),
        'row 1, column BilledCost',
        /missing/,
      ],
      [
        'a number that is not one',
        () => withField(5, 'BilledCost', '"12,5"'),
        'row 5, column BilledCost',
        /number/,
      ],
      [
        'an impossible date',
        () => withField(7, 'ChargePeriodStart', '"2024-09-31 10:00:00"'),
        'row 7, column ChargePeriodStart',
        /timestamp/,
      ],
      [
        'an unknown currency',
        () => withField(9, 'BillingCurrency', '"XYZ"'),
        'row 9, column BillingCurrency',
        /ISO 4217/,
      ],
      [
        'a virtual currency as BillingCurrency (only PricingCurrency may be one)',
        () => withField(10, 'BillingCurrency', '"Token"'),
        'row 10, column BillingCurrency',
        /ISO 4217/,
      ],
      [
        'a missing EffectiveCost',
        () => withField(11, 'EffectiveCost', 'NULL'),
        'row 11, column EffectiveCost',
        /required/,
      ],
      ['Tags that are not JSON', () => withField(13, 'Tags', '"{app: x}"'), 'row 13, column Tags', /JSON/],
      [
        'Tags with an object value',
        () => withField(14, 'Tags', '"{""app"": {""name"": ""x""}}"'),
        'row 14, column Tags',
        /an object as its value/,
      ],
      [
        'ContractApplied that is not JSON',
        () => with13Field(6, 'ContractApplied', '"{""Elements"": [{""ContractId"": ""c-1""}"'),
        'row 6, column ContractApplied',
        /not valid JSON/,
      ],
      [
        'ContractApplied without its Elements',
        () => with13Field(8, 'ContractApplied', '"{""ContractId"": ""c-1""}"'),
        'row 8, column ContractApplied',
        /Elements/,
      ],
      [
        'AllocatedTags with an array value',
        () => with13Field(9, 'AllocatedTags', '"{""share"": [0.5]}"'),
        'row 9, column AllocatedTags',
        /an array as its value/,
      ],
      [
        'AllocatedMethodDetails that is a JSON array',
        () => with13Field(4, 'AllocatedMethodDetails', '"[1, 2]"'),
        'row 4, column AllocatedMethodDetails',
        /JSON object/,
      ],
      [
        'a semicolon-separated file',
        () => Buffer.from(sample.toString('utf8').replaceAll('","', '";"')),
        'row 1',
        /semicolon-separated.*comma-separated/,
      ],
      [
        'a tab-separated file',
        () => Buffer.from(sample.toString('utf8').replaceAll('","', '"\t"')),
        'row 1',
        /tab-separated/,
      ],
      [
        'a row with a field too few',
        () => Buffer.from(lines.slice(0, 20).join('\n') + '\n"a","b"\n'),
        'row 21',
        /fields/,
      ],
    ];
    for (const [what, file, field, message] of cases) {
      it(`${what}: ${field}`, async () => {
        const body = file();
        const error = await refusal(upload(connectionId, body));
        // The row's physical line beside it (the sample has no line breaks in fields: the same number).
        const named = field.replace(/^row (\d+)/, (_, row: string) =>
          row === '1' ? 'row 1 (line 1)' : `row ${row} (line ${recordLines(body)[+row - 1]})`,
        );
        expect(error.details).toContainEqual({ field: named, message: expect.stringMatching(message) });
        expect(await stored(connectionId)).toEqual(before);
        expect(await stagingTables()).toEqual([]);
      });
    }

    it('a truncated gzip stream', async () => {
      const zipped = gzipSync(sample);
      const error = await refusal(upload(connectionId, zipped.subarray(0, zipped.length - 200), 'gzip'));
      expect(error.details).toEqual([{ field: 'body', message: expect.stringMatching(/gzip/) }]);
      expect(await stored(connectionId)).toEqual(before);
    });

    it('a gzip body sent as plain CSV, a plain body sent as gzip, UTF-16 and a workbook say so', async () => {
      const zipped = await refusal(upload(connectionId, gzipSync(sample), 'identity'));
      expect(zipped.details).toEqual([
        { field: 'body', message: expect.stringMatching(/gzip-compressed.*Content-Encoding: gzip/) },
      ]);
      const plain = await refusal(upload(connectionId, sample, 'gzip'));
      expect(plain.details).toEqual([{ field: 'body', message: expect.stringMatching(/is not gzip/) }]);
      // Not UTF-8 CSV at all, as sent or inside gzip: a UTF-16 export, a workbook.
      const utf16 = Buffer.from(`\ufeff${sample.toString('utf8')}`, 'utf16le');
      for (const [body, encoding] of [
        [utf16, 'identity'],
        [gzipSync(utf16), 'gzip'],
      ] as const) {
        const error = await refusal(upload(connectionId, body, encoding));
        expect(error.details).toEqual([{ field: 'body', message: expect.stringMatching(/UTF-16.*UTF-8/) }]);
      }
      const workbook = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), sample.subarray(0, 500)]);
      const zip = await refusal(upload(connectionId, workbook));
      expect(zip.details).toEqual([{ field: 'body', message: expect.stringMatching(/ZIP archive.*CSV/) }]);
      expect(await stored(connectionId)).toEqual(before);
      expect(await stagingTables()).toEqual([]);
    });

    it('collects the first 20 problems', async () => {
      const broken = sample.toString('utf8').replaceAll('"USD"', '"usd"');
      const error = await refusal(upload(connectionId, Buffer.from(broken)));
      expect(error.details).toHaveLength(20);
      expect(error.details[0]).toEqual({
        field: 'row 2 (line 2), column BillingCurrency',
        message: "is not an ISO 4217 currency code: 'usd'",
      });
      expect(await stored(connectionId)).toEqual(before);
    });

    it('an empty body and an unknown encoding', async () => {
      await refusal(upload(connectionId, Buffer.alloc(0)));
      const error = await refusal(upload(connectionId, sample, 'br'));
      expect(error.details[0]!.field).toBe('content_encoding');
      expect(await stored(connectionId)).toEqual(before);
    });
  });

  it('an upload cut off mid-stream stores nothing and leaves no staging table', async () => {
    const connectionId = await newConnection();
    await upload(connectionId, sample);
    const before = await stored(connectionId);
    const file = generated({ rows: 5000, month: '2024-09', seed: 3, version: '1.0' });
    async function* cut() {
      let sent = 0;
      for await (const part of uploadParts(connectionId, file)) {
        if (sent++ === 20) {
          // Cut only once the service is loading the file into its staging table.
          await eventually(async () => ((await stagingTables()).length > 0 ? true : undefined));
          throw new Error('the client went away');
        }
        yield part;
      }
    }
    await expect(costData.uploadCostData(cut(), asA)).rejects.toThrow();
    await eventually(async () => ((await stagingTables()).length === 0 ? true : undefined));
    expect(await stored(connectionId)).toEqual(before);
    const { rows } = await db.query<{ status: string }>(
      `SELECT status FROM cost_uploads WHERE connection_id = $1 ORDER BY started_at`,
      [connectionId],
    );
    expect(rows.map((row) => row.status)).toEqual(['stored', 'failed']);
  });

  it('two concurrent uploads of one period leave one copy', async () => {
    const connectionId = await newConnection();
    const first = generated({ rows: 2000, month: '2025-04', seed: 11, version: '1.0' });
    const second = generated({ rows: 1500, month: '2025-04', seed: 12, version: '1.0' });
    const [a, b] = await Promise.all([upload(connectionId, first), upload(connectionId, second)]);
    const { raw, rollups } = await stored(connectionId);
    // The later swap replaced exactly what the earlier one stored.
    expect([2000, 1500]).toContain(raw.rows);
    expect(rollups.records).toBe(raw.rows);
    expect(Number(a.rowsReplaced) + Number(b.rowsReplaced)).toBe(raw.rows === 2000 ? 1500 : 2000);
    const winner = raw.rows === 2000 ? first : second;
    expect(raw.effective).toBeCloseTo(fileTotals(winner).totals.get('USD')!.effective, 6);
  });

  it("answers 404 for an unknown or another team's connection and 409 for a disabled one", async () => {
    const other = await newConnection(asB);
    await expect(upload(other, sample)).rejects.toBeInstanceOf(NotFoundError);
    await expect(upload(newId('connection'), sample)).rejects.toBeInstanceOf(NotFoundError);
    await expect(upload('not-an-id', sample)).rejects.toBeInstanceOf(NotFoundError);
    const disabled = await newConnection();
    await connections.updateConnection({ id: disabled, status: 'disabled' }, asA);
    await expect(upload(disabled, sample)).rejects.toBeInstanceOf(ConflictError);
    expect((await stored(other)).raw.rows).toBe(0);
    expect((await stored(disabled)).raw.rows).toBe(0);
  });
});
