import Papa from 'papaparse';

/** Records parsed from one piece of the text, where they start, and the CSV syntax problems found. */
export interface CsvBatch {
  records: string[][];
  /**
   * The physical line each record starts on, as an editor numbers them (1 = the file's first line): line
   * breaks inside quoted fields and blank lines count, so it can differ from the record's position.
   */
  lines: number[];
  /** `index` is the record's position in `records` the problem was found at. */
  problems: Array<{ index: number; message: string }>;
  /**
   * Whether no field of the batch can hold a NUL, a backslash, a tab, a carriage return or a line break
   * (the text has none but the records' own line ends): fields need no escaping nor NUL check then.
   */
  plain: boolean;
}

interface ParseResult {
  data: string[][];
  errors: Array<{ row?: number; message: string }>;
  meta: { cursor: number };
}

/** Line breaks (`\n`, which also ends a `\r\n`) in `text` from `from` to `to`. */
function lineBreaks(text: string, from = 0, to = text.length): number {
  let count = 0;
  for (let at = text.indexOf('\n', from); at >= 0 && at < to; at = text.indexOf('\n', at + 1)) count++;
  return count;
}

/** Characters a field must not hold as is in COPY text, or that a NUL check looks for. */
const special = /[\0\\\t]/;

/** How many times `character` occurs in `text`. */
function characters(text: string, character: string): number {
  let count = 0;
  for (let at = text.indexOf(character); at >= 0; at = text.indexOf(character, at + 1)) count++;
  return count;
}

/**
 * CSV records of a text stream, a batch per piece, the way Papa Parse's own streaming does it: each piece
 * is parsed up to its last complete row and the rest waits for the next piece. Papa Parse's core parser is
 * used rather than its stream wrapper for its speed (it jumps between quotes and delimiters with indexOf)
 * and because it reports quote problems per row. Empty lines are dropped; a leading BOM is ignored.
 */
export async function* csvRecords(text: AsyncIterable<string>): AsyncGenerator<CsvBatch> {
  let parser: Papa.Parser | undefined;
  /** The parser when it splits lines at `\r\n`. */
  let crlfParser: Papa.Parser | undefined;
  let pending = '';
  /** The physical line the unparsed text (`pending`) starts on. */
  let line = 1;

  /**
   * The batch of a parse of `consumed` (the text its records came from). Each record but the last of a
   * final parse ended with a line break; when the text has more breaks than that, some are inside quoted
   * fields, and the records' own breaks are counted to place each one.
   */
  const batchOf = (result: ParseResult, consumed: string, final: boolean, crlf: boolean): CsvBatch => {
    const all = result.data;
    const breaks = lineBreaks(consumed);
    const starts = new Array<number>(all.length);
    const ownBreaks = breaks === (final ? all.length - 1 : all.length);
    // A CRLF file's carriage returns are its line ends when there are as many as line breaks.
    const plain =
      ownBreaks &&
      !special.test(consumed) &&
      (crlf ? characters(consumed, '\r') === breaks : !consumed.includes('\r'));
    if (ownBreaks) {
      for (let i = 0; i < all.length; i++) starts[i] = line + i;
    } else {
      let at = line;
      for (let i = 0; i < all.length; i++) {
        starts[i] = at;
        let inside = 0;
        for (const field of all[i]!) if (field.includes('\n')) inside += lineBreaks(field);
        at += 1 + inside;
      }
    }
    line += breaks;
    const problems = result.errors.map((error) => ({ index: error.row ?? 0, message: error.message }));
    // An empty line parses as one empty field.
    if (!all.some((record) => record.length === 1 && record[0] === '')) {
      return { records: all, lines: starts, problems, plain };
    }
    const records: string[][] = [];
    const lines: number[] = [];
    for (const [index, record] of all.entries()) {
      if (record.length === 1 && record[0] === '') {
        for (const problem of problems) if (problem.index > records.length) problem.index--;
        continue;
      }
      records[records.length] = record;
      lines[lines.length] = starts[index]!;
    }
    return { records, lines, problems, plain };
  };

  for await (const piece of text) {
    pending += piece;
    if (!parser) {
      const firstBreak = pending.indexOf('\n');
      if (firstBreak < 0) continue; // the header's end decides the line break
      if (pending.charCodeAt(0) === 0xfeff) pending = pending.slice(1);
      const newline = pending[pending.indexOf('\n') - 1] === '\r' ? '\r\n' : '\n';
      parser = new Papa.Parser({ delimiter: ',', newline, quoteChar: '"' });
      if (newline === '\r\n') crlfParser = parser;
    }
    const result = parser.parse(pending, 0, true) as ParseResult;
    const consumed = pending.slice(0, result.meta.cursor);
    pending = pending.slice(result.meta.cursor);
    // A problem of the unfinished last row is found again when the row is parsed whole.
    result.errors = result.errors.filter((error) => (error.row ?? 0) < result.data.length);
    if (result.data.length > 0 || result.errors.length > 0)
      yield batchOf(result, consumed, false, parser === crlfParser);
  }
  if (!parser) {
    if (pending.charCodeAt(0) === 0xfeff) pending = pending.slice(1);
    parser = new Papa.Parser({
      delimiter: ',',
      newline: pending.endsWith('\r') ? '\r\n' : '\n',
      quoteChar: '"',
    });
  }
  if (pending !== '')
    yield batchOf(parser.parse(pending, 0, false) as ParseResult, pending, true, parser === crlfParser);
}
