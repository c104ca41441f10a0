import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { focusCsv } from '@costgov/costs';
import { recordLines } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem, type Reply } from './support/rest';

const bootstrapKey = 'cg_live_restcostdatabootstrapkey000000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;

const sample = readFileSync(path.resolve(__dirname, '../../../data/focus/focus_sample_1000.csv'));

beforeAll(async () => {
  ({ system } = await startRestSystem(bootstrapKey));
});

afterAll(() => system?.stop());

let counter = 0;

async function newConnection(): Promise<string> {
  const reply = await call('POST', '/v1/guard/connections', {
    body: { name: `aws-${++counter}-${Date.now()}`, provider: 'aws' },
  });
  expect(reply.status, reply.text).toBe(201);
  return reply.body.data.id;
}

/** POST of a file's bytes as they are, with the headers given. */
async function upload(
  connectionId: string,
  body: Uint8Array,
  headers: Record<string, string> = { 'content-type': 'text/csv' },
): Promise<Reply> {
  const response = await fetch(`${system.url}/v1/guard/connections/${connectionId}/cost-data`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bootstrapKey}`, ...headers },
    body: Buffer.from(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
}

const generated = async (options: Parameters<typeof focusCsv>[0]) =>
  Buffer.concat((await focusCsv(options).toArray()) as Buffer[]);

const records = (file: Uint8Array) => parse(file, { columns: true }) as Array<Record<string, string>>;

/** Sums per currency, worked out from the file. */
function totalsOf(file: Uint8Array) {
  const sums = new Map<string, { billed: number; effective: number }>();
  for (const record of records(file)) {
    const sum = sums.get(record.BillingCurrency!) ?? { billed: 0, effective: 0 };
    sum.billed += Number(record.BilledCost);
    sum.effective += Number(record.EffectiveCost);
    sums.set(record.BillingCurrency!, sum);
  }
  return sums;
}

/** The sample's text with one field of one data row (row 2 is the first) replaced. */
function sampleWith(row: number, column: string, text: string): Buffer {
  const lines = sample.toString('utf8').split('\n');
  const header = (parse(lines[0]!)[0] as string[]).slice();
  const fields = (parse(lines[row - 1]!)[0] as string[]).map((field) =>
    field === 'NULL' ? field : `"${field.replaceAll('"', '""')}"`,
  );
  fields[header.indexOf(column)] = text;
  lines[row - 1] = fields.join(',');
  return Buffer.from(lines.join('\n'));
}

/** Whether anything was ever stored for the connection: its last upload time says so. */
async function ingested(connectionId: string): Promise<boolean> {
  const reply = await call('GET', `/v1/guard/connections/${connectionId}`);
  return reply.body.data.last_ingested_at !== null;
}

describe('REST POST /v1/guard/connections/{id}/cost-data: FOCUS 1.0 to 1.3', () => {
  it('stores a generated FOCUS 1.3 file: version, totals, billing periods, no warning', async () => {
    const connectionId = await newConnection();
    const file = await generated({
      rows: 1500,
      month: '2025-06',
      seed: 21,
      version: '1.3',
      timestamps: 'iso',
    });
    const reply = await upload(connectionId, file);
    expect(reply.status, reply.text).toBe(200);
    const summary = reply.body.data;
    expect(summary.focus_version).toBe('1.3');
    expect(summary.rows).toBe(records(file).length);
    const expected = totalsOf(file);
    expect(summary.totals.map((t: { currency: string }) => t.currency)).toEqual([...expected.keys()].sort());
    for (const total of summary.totals) {
      expect(total.billed_cost).toBeCloseTo(expected.get(total.currency)!.billed, 6);
      expect(total.effective_cost).toBeCloseTo(expected.get(total.currency)!.effective, 6);
    }
    const periods = [
      ...new Set(records(file).map((r) => `${r.BillingPeriodStart}|${r.BillingPeriodEnd}`)),
    ].map((pair) => {
      const [start, end] = pair.split('|');
      return { start: new Date(start!).toISOString(), end: new Date(end!).toISOString() };
    });
    expect(summary.billing_period_ranges).toEqual(periods);
    expect(summary.warnings).toEqual([]);
  });

  it('stores an export split into parts, sent as one body of gzip members, whole; a part alone replaces it', async () => {
    const connectionId = await newConnection();
    const file = await generated({ rows: 1500, month: '2025-07', seed: 5, version: '1.2' });
    const [header, ...rows] = file.toString('utf8').trimEnd().split('\n');
    const parts = [rows.slice(0, 600), rows.slice(600, 601), rows.slice(601)].map((part) =>
      Buffer.from(`${header}\n${part.join('\n')}\n`),
    );
    // As `cat part-*.csv.gz` makes it: each part a gzip member with its own header.
    const reply = await upload(connectionId, Buffer.concat(parts.map((part) => gzipSync(part))), {
      'content-type': 'application/gzip',
    });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.data.rows).toBe(records(file).length);
    const expected = totalsOf(file);
    for (const total of reply.body.data.totals) {
      expect(total.billed_cost).toBeCloseTo(expected.get(total.currency)!.billed, 6);
      expect(total.effective_cost).toBeCloseTo(expected.get(total.currency)!.effective, 6);
    }
    // One part sent alone is the period's whole data: it replaces the three.
    const alone = await upload(connectionId, parts[0]!);
    expect(alone.status, alone.text).toBe(200);
    expect(alone.body.data.rows).toBe(records(parts[0]!).length);
    expect(alone.body.data.rows_replaced).toBe(records(file).length);
  });

  it('warns of rows charged in the future, with their count and the latest', async () => {
    const connectionId = await newConnection();
    const month = new Date(Date.now() + 45 * 86_400_000).toISOString().slice(0, 7);
    const file = await generated({ rows: 60, month, seed: 2, version: '1.2', timestamps: 'iso' });
    const future = records(file)
      .map((r) => r.ChargePeriodStart!)
      .filter((start) => Date.parse(start) > Date.now())
      .sort();
    const reply = await upload(connectionId, file);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.data.warnings).toEqual([
      {
        code: 'future_charges',
        message: expect.stringContaining(`${future.length} rows are charged in the future`),
        details: {
          rows: String(future.length),
          latest_charge_period_start: future.at(-1),
          now: expect.any(String),
        },
      },
    ]);
  });

  it('reads null in lower case as null and takes a virtual PricingCurrency', async () => {
    const connectionId = await newConnection();
    const file = await generated({ rows: 40, month: '2025-02', seed: 5, version: '1.2' });
    const [columns, ...rows] = parse(file) as string[][];
    const pricing = columns!.indexOf('PricingCurrency');
    const text = [
      columns!.join(','),
      ...rows.map((fields) =>
        fields
          .map((field, at) =>
            at === pricing ? 'Token' : field === 'NULL' ? 'null' : `"${field.replaceAll('"', '""')}"`,
          )
          .join(','),
      ),
    ].join('\n');
    const reply = await upload(connectionId, Buffer.from(text));
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.data.rows).toBe(rows.length);
  });

  describe('refuses with 422 saying what is wrong, and stores nothing', () => {
    let connectionId: string;
    beforeAll(async () => {
      connectionId = await newConnection();
    });

    const refused = async (reply: Reply) => {
      expectError(reply, 422, 'validation_error');
      expect(await ingested(connectionId)).toBe(false);
      return reply.body.error.details as Array<{ field: string; message: string }>;
    };

    it('broken ContractApplied JSON, naming row, line and column', async () => {
      const file = await generated({ rows: 30, month: '2025-06', seed: 8, version: '1.3' });
      const [columns, ...rows] = parse(file) as string[][];
      const quote = (field: string) => (field === 'NULL' ? field : `"${field.replaceAll('"', '""')}"`);
      const lines = [columns!.join(','), ...rows.map((fields) => fields.map(quote).join(','))];
      // A quoted line break in row 3 puts row 7 on line 8.
      const description = columns!.indexOf('ChargeDescription');
      const third = rows[1]!.map(quote);
      third[description] = quote(`${rows[1]![description]}\nsecond line`);
      lines[2] = third.join(',');
      const seventh = rows[5]!.map(quote);
      seventh[columns!.indexOf('ContractApplied')] = '"{""Elements"": [{""ContractId"": ""c""}"';
      lines[6] = seventh.join(',');
      const body = Buffer.from(`${lines.join('\n')}\n`);
      const line = recordLines(body)[6];
      expect(line).toBe(8);
      expect(await refused(await upload(connectionId, body))).toEqual([
        {
          field: `row 7 (line ${line}), column ContractApplied`,
          message: expect.stringMatching(/is not valid JSON/),
        },
      ]);
    });

    it('a virtual currency as BillingCurrency', async () => {
      expect(await refused(await upload(connectionId, sampleWith(4, 'BillingCurrency', '"Token"')))).toEqual([
        { field: 'row 4 (line 4), column BillingCurrency', message: expect.stringMatching(/ISO 4217/) },
      ]);
    });

    it('a semicolon-separated file', async () => {
      const body = Buffer.from(sample.toString('utf8').replaceAll('","', '";"'));
      expect(await refused(await upload(connectionId, body))).toEqual([
        { field: 'row 1 (line 1)', message: expect.stringMatching(/semicolon-separated/) },
      ]);
    });

    it('a gzip body sent as text/csv without Content-Encoding', async () => {
      expect(await refused(await upload(connectionId, gzipSync(sample)))).toEqual([
        { field: 'body', message: expect.stringMatching(/gzip-compressed.*Content-Encoding: gzip/) },
      ]);
      // The same bytes with the header are fine.
      const stored = await upload(await newConnection(), gzipSync(sample), {
        'content-type': 'text/csv',
        'content-encoding': 'gzip',
      });
      expect(stored.status, stored.text).toBe(200);
      expect(stored.body.data.focus_version).toBe('1.0');
    });
  });
});
