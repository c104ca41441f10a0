import Papa from 'papaparse';

/** Records parsed from one piece of the text, and the CSV syntax problems found in them. */
export interface CsvBatch {
  records: string[][];
  /** `index` is the record's position in `records` the problem was found at. */
  problems: Array<{ index: number; message: string }>;
}

interface ParseResult {
  data: string[][];
  errors: Array<{ row?: number; message: string }>;
  meta: { cursor: number };
}

/**
 * CSV records of a text stream, a batch per piece, the way Papa Parse's own streaming does it: each piece
 * is parsed up to its last complete row and the rest waits for the next piece. Papa Parse's core parser is
 * used rather than its stream wrapper for its speed (it jumps between quotes and delimiters with indexOf)
 * and because it reports quote problems per row. Empty lines are dropped; a leading BOM is ignored.
 */
export async function* csvRecords(text: AsyncIterable<string>): AsyncGenerator<CsvBatch> {
  let parser: Papa.Parser | undefined;
  let pending = '';
  const batchOf = (result: ParseResult): CsvBatch => {
    const records = result.data;
    const problems = result.errors.map((error) => ({ index: error.row ?? 0, message: error.message }));
    // An empty line parses as one empty field.
    if (records.some((record) => record.length === 1 && record[0] === '')) {
      const kept: string[][] = [];
      for (const [index, record] of records.entries()) {
        if (record.length === 1 && record[0] === '') {
          for (const problem of problems) if (problem.index > kept.length) problem.index--;
          continue;
        }
        kept[kept.length] = records[index]!;
      }
      return { records: kept, problems };
    }
    return { records, problems };
  };

  for await (const piece of text) {
    pending += piece;
    if (!parser) {
      const firstBreak = pending.indexOf('\n');
      if (firstBreak < 0) continue; // the header's end decides the line break
      if (pending.charCodeAt(0) === 0xfeff) pending = pending.slice(1);
      const newline = pending[pending.indexOf('\n') - 1] === '\r' ? '\r\n' : '\n';
      parser = new Papa.Parser({ delimiter: ',', newline, quoteChar: '"' });
    }
    const result = parser.parse(pending, 0, true) as ParseResult;
    pending = pending.slice(result.meta.cursor);
    // A problem of the unfinished last row is found again when the row is parsed whole.
    result.errors = result.errors.filter((error) => (error.row ?? 0) < result.data.length);
    if (result.data.length > 0 || result.errors.length > 0) yield batchOf(result);
  }
  if (!parser) {
    if (pending.charCodeAt(0) === 0xfeff) pending = pending.slice(1);
    parser = new Papa.Parser({
      delimiter: ',',
      newline: pending.endsWith('\r') ? '\r\n' : '\n',
      quoteChar: '"',
    });
  }
  if (pending !== '') yield batchOf(parser.parse(pending, 0, false) as ParseResult);
}
