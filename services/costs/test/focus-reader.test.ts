import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '@costgov/errors';
import { recordLines } from '@costgov/testing';
import { parse } from 'csv-parse/sync';
import { focusColumnTable, focusColumns, focusVersionOf } from '../src/cost-data/focus-columns';
import { focusLines } from '../src/cost-data/generate';
import { readFocus } from '../src/cost-data/reader';

const sample = readFileSync(path.resolve(__dirname, '../../../data/focus/focus_sample_1000.csv'));
const header = sample.toString('utf8').split('\n')[0]!;

async function* pieces(bytes: Buffer, size: number) {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
}

async function read(bytes: Buffer, size = 64 * 1024) {
  const reader = readFocus(pieces(bytes, size), 'identity');
  let copyText = '';
  for await (const chunk of reader.chunks) copyText += chunk;
  return { copyText, facts: reader.facts() };
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable('the file was accepted'),
    (error: unknown) => {
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).details;
    },
  );

describe('FOCUS reader', () => {
  it('reads the same rows whatever the chunk boundaries (quoted line breaks, multi-byte characters)', async () => {
    const rows = sample.toString('utf8').split('\n').slice(1, 30);
    // A quoted field holding a line break and a multi-byte character, split across chunks below.
    const at = rows.findIndex((row) => row.includes('"Amazon Elastic Compute Cloud"'));
    rows[at] = rows[at]!.replace('"Amazon Elastic Compute Cloud"', '"Amazon Elastic\nCompute – ü Cloud"');
    const file = Buffer.from(`${header}\n${rows.join('\n')}\n`);
    const whole = await read(file);
    expect(whole.facts.rows).toBe(29);
    expect(whole.copyText).toContain('Amazon Elastic\\nCompute – ü Cloud');
    for (const size of [1, 7, 333]) expect((await read(file, size)).copyText).toBe(whole.copyText);
  });

  it('takes CRLF line breaks, a BOM and blank lines', async () => {
    const lines = sample.toString('utf8').split('\n').slice(0, 11);
    const file = Buffer.from(`\uFEFF${lines.join('\r\n')}\r\n\r\n`);
    const crlf = await read(file, 100);
    const lf = await read(Buffer.from(`${lines.join('\n')}\n`));
    expect(crlf.facts.rows).toBe(10);
    expect(crlf.copyText).toBe(lf.copyText);
  });

  it('refuses an unterminated quote with its row', async () => {
    const lines = sample.toString('utf8').split('\n').slice(0, 5);
    lines[4] = lines[4]!.replace('"USD"', '"USD');
    const details = await refusal(read(Buffer.from(lines.join('\n'))));
    expect(details[0]!.field).toBe('row 5 (line 5)');
    expect(details[0]!.message).toMatch(/CSV/);
  });

  it('refuses timestamps that are not UTC calendar times and accepts offsets', async () => {
    const lines = sample.toString('utf8').split('\n').slice(0, 4);
    const columns = header.split(',').map((name) => name.replaceAll('"', ''));
    const at = columns.indexOf('ChargePeriodStart');
    const withStart = (value: string) =>
      lines
        .map((line, index) =>
          index === 1
            ? line.replace(/"2024-09-\d\d \d\d:00:00"/g, (m, offset: number) =>
                offset > 200 ? `"${value}"` : m,
              )
            : line,
        )
        .join('\n');
    expect(at).toBeGreaterThan(0);
    for (const bad of [
      '2024-02-30 10:00:00',
      '2024-09-01 24:00:00',
      '01/09/2024 10:00',
      '2024-09-01T10:00:00+25:00',
    ]) {
      const details = await refusal(read(Buffer.from(withStart(bad))));
      expect(details.map((detail) => detail.field)).toContain('row 2 (line 2), column ChargePeriodStart');
    }
    const offset = await read(Buffer.from(withStart('2024-09-01T01:30:00+02:00')));
    expect(offset.facts.firstChargeDay).toBe('2024-08-31');
  });

  it('names the row of a malformed quote read together with the header', async () => {
    const lines = sample.toString('utf8').split('\n').slice(0, 4);
    lines[2] = lines[2]!.replace('"USD"', '"USD"x');
    const details = await refusal(read(Buffer.from(lines.join('\n') + '\n')));
    expect(details[0]!.field).toBe('row 3 (line 3)');
  });

  it('names the physical line of a row: quoted line breaks and blank lines count, whatever the chunks', async () => {
    const rows = sample.toString('utf8').split('\n').slice(1, 12);
    // Quoted line breaks in rows 2 and 4 and a blank line after row 5.
    rows[0] = rows[0]!.replace('"Amazon Simple Queue Service"', '"Amazon Simple\nQueue\nService"');
    rows[2] = rows[2]!.replace(/"(\d{13})"/, '"$1\nx"');
    rows[3] = `${rows[3]!}\n`;
    rows[8] = rows[8]!.replace(/"USD"/, '"usd"');
    rows[10] = rows[10]!.replace(/"USD"/, '"usd"');
    const file = Buffer.from(`${header}\n${rows.join('\n')}\n`);
    const lines = recordLines(file);
    const lineOf = (row: number) => lines[row - 1]!;
    expect(lineOf(10)).toBe(10 + 3 + 1); // the test's own arithmetic: 3 breaks inside fields, 1 blank line
    for (const size of [1, 7, 333, 64 * 1024]) {
      const details = await refusal(read(file, size));
      expect(details).toEqual([
        {
          field: `row 10 (line ${lineOf(10)}), column BillingCurrency`,
          message: expect.stringMatching(/ISO 4217/),
        },
        {
          field: `row 12 (line ${lineOf(12)}), column BillingCurrency`,
          message: expect.stringMatching(/ISO 4217/),
        },
      ]);
    }
  });

  it("reads an export split into files, sent as one body with each part's header, as one file", async () => {
    const rows = sample.toString('utf8').split('\n').slice(1, 31);
    const parts = [rows.slice(0, 12), rows.slice(12, 13), rows.slice(13)];
    // The second part with its own byte order mark, the third after a blank line.
    const body = Buffer.from(
      `${header}\n${parts[0]!.join('\n')}\n` +
        `\uFEFF${header}\n${parts[1]!.join('\n')}\n\n` +
        `${header}\n${parts[2]!.join('\n')}\n`,
    );
    const whole = await read(Buffer.from(`${header}\n${rows.join('\n')}\n`));
    for (const size of [5, 333, 64 * 1024]) {
      const joined = await read(body, size);
      expect(joined.facts.rows).toBe(30);
      expect(joined.copyText).toBe(whole.copyText);
      expect(joined.facts.totals).toEqual(whole.facts.totals);
    }
    // gzip parts concatenated as they are (one gzip member each), as `cat part-*.csv.gz` makes them.
    const gzipped = Buffer.concat(
      parts.map((part) => gzipSync(Buffer.from(`${header}\n${part.join('\n')}\n`))),
    );
    const reader = readFocus(pieces(gzipped, 1_000), 'gzip');
    let copyText = '';
    for await (const chunk of reader.chunks) copyText += chunk;
    expect(copyText).toBe(whole.copyText);
    expect(reader.facts().rows).toBe(30);
  });

  it('reads CRLF parts joined by a CRLF line break, as `costgov ingest --parts` sends them', async () => {
    const rows = sample.toString('utf8').split('\n').slice(1, 21);
    const part = (lines: string[]) => `${header}\r\n${lines.join('\r\n')}\r\n`;
    const body = Buffer.from(`${part(rows.slice(0, 7))}\r\n${part(rows.slice(7))}`);
    const whole = await read(Buffer.from(`${header}\n${rows.join('\n')}\n`));
    for (const size of [3, 64 * 1024]) {
      const joined = await read(body, size);
      expect(joined.facts.rows).toBe(20);
      expect(joined.copyText).toBe(whole.copyText);
    }
  });

  it('refuses a part whose header has other columns, naming its row and line', async () => {
    const rows = sample.toString('utf8').split('\n').slice(1, 6);
    const columns = parse(header)[0] as string[];
    const reordered = [...columns.slice(1), columns[0]!].map((name) => `"${name}"`).join(',');
    const body = Buffer.from(`${header}\n${rows.slice(0, 2).join('\n')}\n${reordered}\n${rows[2]}\n`);
    const details = await refusal(read(body));
    expect(details).toEqual([
      { field: 'row 4 (line 4)', message: expect.stringMatching(/header row with other columns/) },
    ]);
  });

  it('reads NULL, null and empty fields as null', async () => {
    const lines = sample.toString('utf8').split('\n').slice(0, 4);
    const file = Buffer.from(
      [lines[0], lines[1]!.replaceAll('NULL', 'null'), lines[2]!.replaceAll('NULL', ''), lines[3]].join('\n'),
    );
    const { copyText } = await read(file);
    const expected = (await read(Buffer.from(lines.join('\n')))).copyText;
    expect(copyText).toBe(expected);
    expect(copyText).toContain('\\N');
    // A required column written as null is missing.
    const columns = header.split(',').map((name) => name.replaceAll('"', ''));
    const fields = parse(lines[1]!)[0] as string[];
    fields[columns.indexOf('BilledCost')] = 'null';
    const quoted = fields.map((field) => `"${field.replaceAll('"', '""')}"`).join(',');
    const details = await refusal(read(Buffer.from(`${header}\n${quoted}\n`)));
    expect(details).toEqual([{ field: 'row 2 (line 2), column BilledCost', message: 'is required' }]);
  });

  it('detects versions from the column table, and says which columns each version has', () => {
    // The specification's own counts: 43 columns in 1.0, 7 more in 1.1 and 1.2, 8 more in 1.3.
    expect([...Object.values(focusColumns)].map((columns) => columns.length)).toEqual([43, 50, 57, 65]);
    for (const version of ['1.0', '1.1', '1.2', '1.3'] as const) {
      const written = [...focusLines({ rows: 1, month: '2025-01', version })][0]!.trim().split(',');
      expect(focusVersionOf(written)).toBe(version);
    }
    const deprecated = focusColumnTable.filter((column) => column.deprecated).map((column) => column.name);
    expect(deprecated.sort()).toEqual(['ProviderName', 'PublisherName']);
    // A 1.0 file with one 1.3 column is read as 1.3; ProviderName alone does not make a file older.
    expect(focusVersionOf(['BilledCost', 'ProviderName', 'HostProviderName'])).toBe('1.3');
  });
});
