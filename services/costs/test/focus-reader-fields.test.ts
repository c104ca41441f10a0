import { describe, expect, it } from 'vitest';
import { ValidationError } from '@costgov/errors';
import { parse } from 'csv-parse/sync';
import { focusLines } from '../src/cost-data/generate';
import { readFocus, storedColumns } from '../src/cost-data/reader';

/**
 * Fields the COPY text must escape (backslash, tab, carriage return, line break) and a NUL the reader
 * refuses, in files whose other batches need nothing escaped: the reader skips escaping and the NUL
 * check only where a batch's text holds none of them.
 */
async function* pieces(bytes: Buffer, size: number) {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
}

async function copyRows(text: string, size: number) {
  const reader = readFocus(pieces(Buffer.from(text), size), 'identity');
  let copy = '';
  for await (const chunk of reader.chunks) copy += chunk;
  reader.facts();
  // COPY text back to values as Postgres reads it: \N is null, \b a backspace, a backslash before any
  // other character that character.
  return copy
    .slice(0, -1)
    .split('\n')
    .map((line) =>
      line
        .split('\t')
        .map((field) =>
          field === '\\N'
            ? null
            : field.replace(/\\(.)/g, (_, c: string) => ({ t: '\t', n: '\n', r: '\r', b: '\b' })[c] ?? c),
        ),
    );
}

const descriptionAt = storedColumns.findIndex(([column]) => column === 'charge_description');

/** A generated file of `rows` rows whose ChargeDescription of row `at` (0-based) is `value`. */
function fileWith(rows: number, at: number, value: string, newline = '\n') {
  const lines = [...focusLines({ rows, month: '2026-02', seed: 5 })].map((line) => line.slice(0, -1));
  const records = parse(lines.join('\n'), { relax_quotes: true }) as string[][];
  const column = records[0]!.indexOf('ChargeDescription');
  const quote = (field: string) => (field === 'NULL' ? field : `"${field.replaceAll('"', '""')}"`);
  const data = records.slice(1);
  data[at]![column] = value;
  const text = [records[0]!.join(','), ...data.map((record) => record.map(quote).join(','))].join(newline);
  return { text: text + newline, descriptions: data.map((record) => record[column]!) };
}

describe('FOCUS reader: fields COPY must escape', () => {
  for (const [name, value] of [
    ['a backslash', 'C:\\billing\\export'],
    ['a tab', 'hours\tof compute'],
    ['a line break', 'first line\nsecond line'],
    ['a carriage return', 'first\rsecond'],
    ['a CRLF', 'first\r\nsecond'],
  ] as const) {
    for (const newline of ['\n', '\r\n']) {
      it(`stores ${name} as it was written, the other batches unchanged (${newline === '\n' ? 'LF' : 'CRLF'} file)`, async () => {
        const { text, descriptions } = fileWith(400, 250, value, newline);
        // Small pieces: many batches, only one of which holds the field.
        for (const size of [4096, 1 << 20]) {
          const rows = await copyRows(text, size);
          expect(rows).toHaveLength(400);
          expect(rows.map((row) => row[descriptionAt])).toEqual(descriptions);
          expect(rows[250]![descriptionAt]).toBe(value);
        }
      });
    }
  }

  it('refuses a NUL in any batch, naming its row and column', async () => {
    const { text } = fileWith(400, 300, 'before\0after');
    for (const size of [4096, 1 << 20]) {
      const error = await copyRows(text, size).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details).toEqual([
        { field: 'row 302 (line 302), column ChargeDescription', message: 'contains a NUL character' },
      ]);
    }
  });
});
