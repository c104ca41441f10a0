import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ValidationError, type FieldViolation } from '@costgov/errors';
import { csvRecords } from './csv-records';
import {
  columnKinds,
  focusVersionOf,
  requiredColumns,
  type ColumnKind,
  type FocusVersion,
} from './focus-columns';
import { DecimalSum } from './decimal-sum';
import {
  contractAppliedProblem,
  copyField,
  currencyProblem,
  decimalProblem,
  jsonProblem,
  tagsProblem,
  tagsStored,
  timestampForCopy,
  timestampProblem,
  utcDayOf,
} from './values';

export type ContentEncoding = 'identity' | 'gzip';

/**
 * FOCUS's allowed values of ChargeCategory and ChargeFrequency, stored in the specification's spelling
 * whatever the case in the file (the FOCUS sample writes `Usage-based`), so that every query can compare
 * them exactly. A value outside the list is kept as given.
 */
const allowedValues: Record<string, readonly string[]> = {
  charge_category: ['Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment'],
  charge_frequency: ['One-Time', 'Recurring', 'Usage-Based'],
};

/**
 * Raw-row columns the reader writes, in COPY order, each from its FOCUS column (missing ones are NULL);
 * a third name is the column read when the file lacks the second (FOCUS 1.3 deprecates `ProviderName`
 * for `ServiceProviderName`, so `provider_name` is the one name rules read whatever the version).
 */
export const storedColumns: ReadonlyArray<readonly [string, string, string?]> = [
  ['billing_period_start', 'BillingPeriodStart'],
  ['billing_period_end', 'BillingPeriodEnd'],
  ['charge_period_start', 'ChargePeriodStart'],
  ['charge_period_end', 'ChargePeriodEnd'],
  ['billed_cost', 'BilledCost'],
  ['effective_cost', 'EffectiveCost'],
  ['list_cost', 'ListCost'],
  ['contracted_cost', 'ContractedCost'],
  ['billing_currency', 'BillingCurrency'],
  ['service_name', 'ServiceName'],
  ['service_category', 'ServiceCategory'],
  ['resource_id', 'ResourceId'],
  ['resource_name', 'ResourceName'],
  ['resource_type', 'ResourceType'],
  ['region_id', 'RegionId'],
  ['sub_account_id', 'SubAccountId'],
  ['sub_account_name', 'SubAccountName'],
  ['billing_account_id', 'BillingAccountId'],
  ['charge_category', 'ChargeCategory'],
  ['sku_id', 'SkuId'],
  ['pricing_quantity', 'PricingQuantity'],
  ['pricing_unit', 'PricingUnit'],
  ['consumed_quantity', 'ConsumedQuantity'],
  ['consumed_unit', 'ConsumedUnit'],
  ['provider_name', 'ProviderName', 'ServiceProviderName'],
  ['tags', 'Tags'],
  ['charge_description', 'ChargeDescription'],
  ['charge_class', 'ChargeClass'],
  ['pricing_category', 'PricingCategory'],
  ['commitment_discount_id', 'CommitmentDiscountId'],
  ['commitment_discount_category', 'CommitmentDiscountCategory'],
  ['commitment_discount_status', 'CommitmentDiscountStatus'],
  ['commitment_discount_type', 'CommitmentDiscountType'],
  ['capacity_reservation_id', 'CapacityReservationId'],
  ['capacity_reservation_status', 'CapacityReservationStatus'],
  ['charge_frequency', 'ChargeFrequency'],
  ['service_provider_name', 'ServiceProviderName'],
  ['host_provider_name', 'HostProviderName'],
  ['contract_applied', 'ContractApplied'],
  ['allocated_method_id', 'AllocatedMethodId'],
  ['allocated_method_details', 'AllocatedMethodDetails'],
  ['allocated_resource_id', 'AllocatedResourceId'],
  ['allocated_resource_name', 'AllocatedResourceName'],
  ['allocated_tags', 'AllocatedTags'],
];

/** Per stored column, its allowed values by their lower case (only the columns of allowedValues). */
const canonical: Array<Map<string, string> | undefined> = storedColumns.map(([stored]) => {
  const values = allowedValues[stored];
  return values && new Map(values.map((value) => [value.toLowerCase(), value]));
});

/** What the reader learned from a file it read to the end without a problem. */
export interface FocusFileFacts {
  version: FocusVersion;
  rows: number;
  /** UTC start dates of the billing periods, sorted. */
  billingPeriods: string[];
  /** Each distinct BillingPeriodStart/BillingPeriodEnd pair, sorted. */
  billingPeriodRanges: Array<{ start: Date; end: Date }>;
  firstChargeDay: string;
  lastChargeDay: string;
  /** Bytes received, as sent (compressed when gzip). */
  bytes: number;
  /** Per billing currency (sorted), the exact sums of BilledCost and EffectiveCost, as numeric text. */
  totals: Array<{ currency: string; billedCost: string; effectiveCost: string }>;
  /**
   * Rows whose ChargePeriodStart is after `ReadOptions.chargedAfter` (none without it), and the latest
   * such start in UTC to the second (`2026-11-30T05:00:00Z`), as Postgres would count them once stored.
   */
  future: { rows: number; latest: string };
}

export interface FocusReader {
  /** COPY text of the raw rows, in chunks of whole lines; throws ValidationError on a bad file. */
  chunks: AsyncIterable<string>;
  /** Available once `chunks` ended without throwing. */
  facts(): FocusFileFacts;
}

export interface ReadOptions {
  /** How many problems are collected before reading stops. */
  maxErrors?: number;
  /** Characters of COPY text per chunk. */
  chunkChars?: number;
  /** Rows charged after this instant are counted in `facts().future`. */
  chargedAfter?: Date;
}

const checks: Record<ColumnKind, (value: string) => string | undefined> = {
  decimal: decimalProblem,
  datetime: timestampProblem,
  currency: currencyProblem,
  tags: tagsProblem,
  json: jsonProblem,
  contractApplied: contractAppliedProblem,
};

const required = new Set<string>(requiredColumns);

interface TypedColumn {
  index: number;
  name: string;
  kind: ColumnKind;
  required: boolean;
}

/**
 * Reads a FOCUS CSV export as it streams in: decompresses, parses, checks every row and turns it into
 * COPY text, holding only the chunk in flight. Problems are collected up to `maxErrors`, each naming the
 * row (the CSV record, the header being row 1), the physical line it starts on (as an editor numbers
 * them: line breaks inside quoted fields and blank lines count) and the column; once there is one,
 * nothing more is produced and the end throws them all. `NULL`, `null` and an empty field are all null.
 */
export function readFocus(
  source: AsyncIterable<Uint8Array>,
  encoding: ContentEncoding,
  { maxErrors = 20, chunkChars = 256 * 1024, chargedAfter }: ReadOptions = {},
): FocusReader {
  let facts: FocusFileFacts | undefined;
  let bytes = 0;
  /** The first bytes as sent, to tell a gzip body sent without its Content-Encoding. */
  let head: Uint8Array = new Uint8Array(0);
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      if (head.length < 2) head = Buffer.concat([head, chunk.subarray(0, 2 - head.length)]);
      bytes += chunk.byteLength;
      yield chunk;
    }
  }

  /**
   * The file as text: gunzipped when it is gzip, decoded as UTF-8 across chunk boundaries. Its first
   * bytes are looked at once, so that a file that is not UTF-8 CSV at all (gzip sent as plain text, a
   * UTF-16 export, a spreadsheet) is refused as what it is rather than for the columns it seems to lack.
   */
  async function* text(): AsyncGenerator<string> {
    const decoder = new TextDecoder();
    let start: Uint8Array = new Uint8Array(0);
    let sniffed = false;
    for await (const chunk of encoding === 'gzip' ? gunzipped(counted()) : counted()) {
      if (!sniffed) {
        start = Buffer.concat([start, chunk.subarray(0, 4 - start.length)]);
        if (start.length >= 4) {
          sniffed = true;
          notCsv(start, encoding);
        }
      }
      const piece = decoder.decode(chunk, { stream: true });
      if (piece) yield piece;
    }
    if (!sniffed) notCsv(start, encoding);
    const rest = decoder.decode();
    if (rest) yield rest;
  }

  async function* chunks(): AsyncGenerator<string> {
    const problems: FieldViolation[] = [];
    const problem = (field: string, message: string) => {
      problems.push({ field, message });
      if (problems.length >= maxErrors) throw new ValidationError(problems, refusal);
    };

    let header: string[] | undefined;
    let typed: TypedColumn[] = [];
    let sources: number[] = [];
    let periodStart = -1;
    let periodEnd = -1;
    let chargeStart = -1;
    let billed = -1;
    let effective = -1;
    let currencyAt = -1;
    const sums = new Map<string, { billed: DecimalSum; effective: DecimalSum }>();
    let lastCurrency = '';
    let lastSums: { billed: DecimalSum; effective: DecimalSum } | undefined;
    const future = futureCounter(chargedAfter);
    let row = 1;
    let rows = 0;
    const periods = new Set<string>();
    const ranges = new Set<string>();
    let lastRange: [string, string] = ['', ''];
    /** Timestamps and tags already checked, as stored (one map: a timestamp is never a JSON object). */
    const checked = new Map<string, string>();
    let firstDay = '';
    let lastDay = '';
    let pending = '';
    const line: string[] = new Array<string>(storedColumns.length);

    try {
      for await (const batch of csvRecords(text())) {
        // A header in another separator garbles quotes too: that is the one thing to say about it.
        const separator = header ? undefined : otherSeparator(batch.records[0] ?? []);
        if (separator) {
          problem(`row 1 (line ${batch.lines[0]!})`, separatorProblem(separator));
          throw new ValidationError(problems, refusal);
        }
        for (const { index, message } of batch.problems) {
          // `row` counts the header once it is read; before that, the batch starts at row 1.
          const at = batch.lines[Math.min(index, batch.lines.length - 1)];
          const where = at === undefined ? '' : ` (line ${at})`;
          problem(`row ${(header ? row : 0) + index + 1}${where}`, `is not valid CSV (${message})`);
        }
        const { records, lines, plain } = batch;
        for (let position = 0; position < records.length; position++) {
          const record = records[position]!;
          if (!header) {
            header = record;
            checkHeader(header, lines[position]!, problem);
            // Rows cannot be read against a header that is wrong.
            if (problems.length > 0) throw new ValidationError(problems, refusal);
            typed = header.flatMap((name, index) => {
              const kind = columnKinds[name];
              return kind ? [{ index, name, kind, required: required.has(name) }] : [];
            });
            sources = storedColumns.map(([, focus, instead]) => {
              const index = header!.indexOf(focus);
              return index < 0 && instead ? header!.indexOf(instead) : index;
            });
            periodStart = header.indexOf('BillingPeriodStart');
            periodEnd = header.indexOf('BillingPeriodEnd');
            chargeStart = header.indexOf('ChargePeriodStart');
            billed = header.indexOf('BilledCost');
            effective = header.indexOf('EffectiveCost');
            currencyAt = header.indexOf('BillingCurrency');
            continue;
          }
          row++;
          const physical = lines[position]!;
          // A header row has a column name where a data row has BilledCost, a number (the one test made
          // for every row): the header again is the next part of an export split into files, sent as one
          // body; another header cannot be read against the first.
          if ((record[billed]?.charCodeAt(0) ?? 0) >= 65 /* A */) {
            if (repeatsHeader(record, header)) continue;
            if (looksLikeHeader(record)) {
              problem(
                where(row, physical),
                "is a header row with other columns than the file's first row: the parts of one upload " +
                  'must share one header',
              );
              continue;
            }
          }
          if (record.length !== header.length) {
            problem(where(row, physical), `has ${record.length} fields; the header has ${header.length}`);
            continue;
          }
          let fine = true;
          for (let i = 0; i < record.length; i++) {
            const value = record[i]!;
            if (value === 'NULL' || value === 'null') record[i] = '';
            else if (!plain && value.includes('\0')) {
              problem(where(row, physical, header[i]), 'contains a NUL character');
              fine = false;
            }
          }
          for (const column of typed) {
            const value = record[column.index]!;
            if (value === '') {
              if (column.required) {
                problem(where(row, physical, column.name), 'is required');
                fine = false;
              }
              continue;
            }
            const remembered = column.kind === 'datetime' || column.kind === 'tags';
            if (remembered) {
              // Periods repeat on every row, charge hours and a resource's tags often: each distinct
              // one is checked once (of the last 10,000).
              const known = checked.get(value);
              if (known !== undefined) {
                record[column.index] = known;
                continue;
              }
            }
            const wrong = checks[column.kind](value);
            if (wrong) {
              problem(where(row, physical, column.name), wrong);
              fine = false;
            } else if (remembered) {
              if (checked.size >= 10_000) checked.clear();
              const stored = column.kind === 'datetime' ? timestampForCopy(value) : tagsStored(value);
              checked.set(value, (record[column.index] = stored));
            }
          }
          if (!fine || problems.length > 0) continue; // checking goes on; storing has stopped
          rows++;
          const period = utcDayOf(record[periodStart]!);
          periods.add(period);
          // Rows of one period come together: a new pair is looked up only when it changes.
          if (record[periodStart] !== lastRange[0] || record[periodEnd] !== lastRange[1]) {
            lastRange = [record[periodStart]!, record[periodEnd]!];
            if (ranges.size < 10_000) ranges.add(`${lastRange[0]}\t${lastRange[1]}`);
          }
          const day = utcDayOf(record[chargeStart]!);
          if (firstDay === '' || day < firstDay) firstDay = day;
          if (day > lastDay) lastDay = day;
          future.add(record[chargeStart]!, day);
          // Totals per currency, exactly (numeric sums): what the upload answers without a query.
          const currency = record[currencyAt]!;
          if (currency !== lastCurrency || !lastSums) {
            lastCurrency = currency;
            lastSums = sums.get(currency);
            if (!lastSums)
              sums.set(currency, (lastSums = { billed: new DecimalSum(), effective: new DecimalSum() }));
          }
          lastSums.billed.add(record[billed]!);
          lastSums.effective.add(record[effective]!);
          for (let c = 0; c < sources.length; c++) {
            const index = sources[c]!;
            let value = index < 0 ? '' : record[index]!;
            if (value === '') {
              line[c] = '\\N';
              continue;
            }
            const allowed = canonical[c];
            if (allowed) value = allowed.get(value.toLowerCase()) ?? value;
            line[c] = plain ? value : copyField(value);
          }
          line[0] = period; // the billing period is kept as its UTC start date
          pending += line.join('\t') + '\n';
          if (pending.length >= chunkChars) {
            yield pending;
            pending = '';
          }
        }
      }
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      const unreadable = unreadableInput(error, head);
      if (!unreadable) throw error;
      problems.push(unreadable);
    }
    if (problems.length > 0) throw new ValidationError(problems, refusal);
    if (!header) {
      throw new ValidationError(
        [{ field: 'body', message: 'is empty: a FOCUS file needs a header row' }],
        refusal,
      );
    }
    if (pending) yield pending;
    facts = {
      version: focusVersionOf(header),
      rows,
      billingPeriods: [...periods].sort(),
      billingPeriodRanges: rangesOf(ranges),
      firstChargeDay: firstDay,
      lastChargeDay: lastDay,
      bytes,
      totals: [...sums.keys()].sort().map((currency) => ({
        currency,
        billedCost: sums.get(currency)!.billed.toString(),
        effectiveCost: sums.get(currency)!.effective.toString(),
      })),
      future: future.result(),
    };
  }

  return {
    chunks: chunks(),
    facts() {
      if (!facts) throw new Error('The FOCUS file has not been read to its end.');
      return facts;
    },
  };
}

/**
 * Counts checked ChargePeriodStart values (as stored: a zone on each) after `after`, compared as
 * Postgres compares the stored timestamptz with it: to the microsecond (the fraction rounded to six
 * digits). Days before `after`'s UTC day are passed over without parsing.
 */
export function futureCounter(after: Date | undefined) {
  const afterMs = after?.getTime() ?? Number.POSITIVE_INFINITY;
  const afterDay = after ? after.toISOString().slice(0, 10) : '9999-99-99';
  let rows = 0;
  /** The latest future start, in microseconds since the epoch. */
  let latest = Number.NEGATIVE_INFINITY;
  return {
    add(value: string, day: string) {
      if (day < afterDay) return;
      const fraction = /\.(\d+)/.exec(value);
      let micros = 0;
      let text = value;
      if (fraction) {
        const digits = fraction[1]!.padEnd(7, '0');
        micros = Number(digits.slice(0, 6)) + (digits.charCodeAt(6) >= 53 /* 5 */ ? 1 : 0);
        text = value.replace(fraction[0], '');
      }
      const at = Date.parse(text.replace(' ', 'T')) * 1000 + micros;
      if (!(at > afterMs * 1000)) return;
      rows++;
      if (at > latest) latest = at;
    },
    result(): { rows: number; latest: string } {
      if (rows === 0) return { rows, latest: '' };
      const second = Math.floor(latest / 1_000_000) * 1000;
      return { rows, latest: new Date(second).toISOString().replace(/\.\d{3}Z$/, 'Z') };
    },
  };
}

/** The distinct BillingPeriodStart/End pairs (checked timestamps) as instants, sorted. */
function rangesOf(ranges: Set<string>): Array<{ start: Date; end: Date }> {
  const distinct = new Map<string, { start: Date; end: Date }>();
  for (const pair of ranges) {
    const [start, end] = pair.split('\t').map((value) => new Date(value.replace(' ', 'T'))) as [Date, Date];
    distinct.set(`${start.getTime()}/${end.getTime()}`, { start, end });
  }
  return [...distinct.values()].sort(
    (a, b) => a.start.getTime() - b.start.getTime() || a.end.getTime() - b.end.getTime(),
  );
}

/**
 * Whether `record` is `header` again (a part's own byte order mark aside). Exports of large accounts come
 * as several files per billing period, each with the header; sent as one body (concatenated, the header
 * repeated; gzip members concatenated likewise), they are one upload that replaces the period whole. No
 * data row can be the header: `BilledCost` is not a number.
 */
function repeatsHeader(record: string[], header: string[]): boolean {
  if (record.length !== header.length) return false;
  if (firstName(record[0]!) !== header[0]) return false;
  for (let i = 1; i < record.length; i++) if (record[i] !== header[i]) return false;
  return true;
}

/**
 * A part's first column name as parsed: after a byte order mark, which the CSV parser sees as text
 * before the quote, so a quoted name keeps its quotes.
 */
function firstName(field: string): string {
  if (field.charCodeAt(0) !== 0xfeff) return field;
  const name = field.slice(1);
  return name.length > 1 && name.startsWith('"') && name.endsWith('"')
    ? name.slice(1, -1).replaceAll('""', '"')
    : name;
}

/** A header row of other columns (a part exported with another column set or order). */
const looksLikeHeader = (record: string[]) => {
  const names = new Set(record);
  names.add(firstName(record[0]!));
  return requiredColumns.every((name) => names.has(name));
};

/** A row problem's `field`: the record, the physical line it starts on and the column. */
const where = (row: number, line: number, column?: string) =>
  `row ${row} (line ${line})${column === undefined ? '' : `, column ${column}`}`;

const refusal = 'The cost data file is not a valid FOCUS export; nothing of it was stored.';

/**
 * The separator a header that is not comma-separated seems to use: one that, taken as the separator,
 * turns up required columns the commas did not.
 */
function otherSeparator(header: string[]): string | undefined {
  const found = (names: Iterable<string>) => {
    const set = new Set(names);
    return requiredColumns.filter((name) => set.has(name)).length;
  };
  const byComma = found(header);
  const text = header.join(',');
  for (const separator of [';', '\t', '|']) {
    if (!text.includes(separator)) continue;
    const names = text.split(/[,;\t|]/).map((name) => name.replaceAll('"', '').trim());
    if (found(names) > byComma) return separator;
  }
  return undefined;
}

const separatorNames: Record<string, string> = { ';': 'semicolon', '\t': 'tab', '|': 'pipe' };

const separatorProblem = (separator: string) =>
  `looks ${separatorNames[separator]}-separated ('${separator === '\t' ? '\\t' : separator}' between ` +
  'the column names): a FOCUS CSV file must be comma-separated; export it again with commas';

function checkHeader(
  header: string[],
  line: number,
  problem: (field: string, message: string) => void,
): void {
  const at = `row 1 (line ${line})`;
  const seen = new Set<string>();
  header.forEach((name, index) => {
    if (seen.has(name)) problem(`${at}, column ${index + 1}`, `repeats the column name '${name}'`);
    seen.add(name);
  });
  for (const name of requiredColumns) {
    if (!seen.has(name)) problem(`${at}, column ${name}`, 'is missing: every FOCUS file must have it');
  }
}

/**
 * Refuses a file whose first bytes (after gunzipping) say it is not UTF-8 CSV: gzip magic bytes in a
 * body sent as plain text, a UTF-16 byte order mark, a ZIP archive (an .xlsx workbook is one).
 */
function notCsv(start: Uint8Array, encoding: ContentEncoding): void {
  const is = (...bytes: number[]) => bytes.every((byte, index) => start[index] === byte);
  let message: string | undefined;
  if (encoding === 'identity' && is(0x1f, 0x8b)) {
    message =
      'is gzip-compressed (it starts with the gzip magic bytes 1f 8b) but was sent as plain ' +
      'text/csv: send it with Content-Encoding: gzip, or as application/gzip';
  } else if (is(0xff, 0xfe) || is(0xfe, 0xff)) {
    message = 'is UTF-16 encoded (it starts with a UTF-16 byte order mark): save the CSV file as UTF-8';
  } else if (is(0x50, 0x4b, 0x03, 0x04)) {
    message = 'is a ZIP archive (an .xlsx workbook is one), not a CSV file: export the FOCUS data as CSV';
  }
  if (message) throw new ValidationError([{ field: 'body', message }], refusal);
}

/** A damaged gzip stream, as a problem of the file; anything else is not the file's fault. */
function unreadableInput(error: unknown, head: Uint8Array): FieldViolation | undefined {
  const code = (error as { code?: string }).code;
  if (code === 'Z_DATA_ERROR' && head.length > 0 && head[0] !== 0x1f) {
    return {
      field: 'body',
      message:
        'is not gzip (it does not start with the gzip magic bytes 1f 8b) but was sent as gzip: send a ' +
        'plain CSV file as text/csv without Content-Encoding',
    };
  }
  if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR') {
    return { field: 'body', message: `is not a readable gzip stream (${(error as Error).message})` };
  }
  return undefined;
}

/** Gunzipped bytes; a damaged stream or a failing source ends the iteration with its own error. */
async function* gunzipped(source: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  let ended!: (error: Error | null | undefined) => void;
  const outcome = new Promise<Error | null | undefined>((resolve) => (ended = resolve));
  const output = pipeline(Readable.from(source, { objectMode: false }), createGunzip(), ended);
  try {
    for await (const chunk of output) yield chunk as Buffer;
  } catch (error) {
    throw (await outcome) ?? error;
  }
  const failure = await outcome;
  if (failure) throw failure;
}
