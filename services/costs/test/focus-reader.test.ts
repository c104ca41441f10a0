import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '@costgov/errors';
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
    expect(details[0]!.field).toBe('row 5');
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
      expect(details.map((detail) => detail.field)).toContain('row 2, column ChargePeriodStart');
    }
    const offset = await read(Buffer.from(withStart('2024-09-01T01:30:00+02:00')));
    expect(offset.facts.firstChargeDay).toBe('2024-08-31');
  });

  it('names the row of a malformed quote read together with the header', async () => {
    const lines = sample.toString('utf8').split('\n').slice(0, 4);
    lines[2] = lines[2]!.replace('"USD"', '"USD"x');
    const details = await refusal(read(Buffer.from(lines.join('\n') + '\n')));
    expect(details[0]!.field).toBe('row 3');
  });
});
