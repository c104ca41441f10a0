import { parse } from 'csv-parse/sync';

/** One cost row of a test's FOCUS file. */
export interface FocusRow {
  cost: number;
  /** The row's tags; a file with any tagged row has a Tags column. */
  tags?: Record<string, string>;
}

export interface FocusFileOptions {
  /** The billing period, `YYYY-MM`; the current month (UTC) by default. */
  month?: string;
  /** `ServiceName` of every row; `EC2` by default. */
  service?: string;
  /** `ResourceId` of row `i`; `i-<i>` by default. */
  resourceId?: (index: number) => string;
  /**
   * The day each row is charged on, for an hour from midnight UTC: the period's first by default,
   * `spread` over the days of the current month so far (one per day, cycling), or a day per row.
   */
  chargeDay?: 'spread' | ((index: number) => Date);
}

const columns =
  'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId';

/** A FOCUS timestamp as exports write it: ISO 8601 in UTC, without milliseconds. */
const stamp = (date: Date) => date.toISOString().replace('.000Z', 'Z');

/**
 * A FOCUS export in USD with one row per cost, billed and effective cost equal: the smallest file the
 * costs service accepts, so that a test breaches budgets and scores tags with amounts of its choosing.
 */
export function focusFile(rows: Array<number | FocusRow>, options: FocusFileOptions = {}): string {
  const { service = 'EC2', resourceId = (i: number) => `i-${i}` } = options;
  const now = new Date();
  const [year, month] = options.month
    ? options.month.split('-').map(Number)
    : [now.getUTCFullYear(), now.getUTCMonth() + 1];
  const start = new Date(Date.UTC(year!, month! - 1, 1));
  const end = new Date(Date.UTC(year!, month!, 1));
  const dayOf =
    options.chargeDay === 'spread'
      ? (i: number) => new Date(start.getTime() + (i % now.getUTCDate()) * 86_400_000)
      : (options.chargeDay ?? (() => start));
  const costRows = rows.map((row) => (typeof row === 'number' ? { cost: row } : row));
  const tagged = costRows.some((row) => row.tags);
  const lines = costRows.map(({ cost, tags }, i) => {
    const day = dayOf(i);
    const fields = [
      cost,
      cost,
      'USD',
      stamp(start),
      stamp(end),
      stamp(day),
      stamp(new Date(day.getTime() + 3_600_000)),
      service,
      resourceId(i),
    ];
    if (tagged) fields.push(tags ? `"${JSON.stringify(tags).replaceAll('"', '""')}"` : '');
    return fields.join(',');
  });
  return `${tagged ? `${columns},Tags` : columns}\n${lines.join('\n')}\n`;
}

/** A file as the gateway streams it to costs' UploadCostData: a `start`, then chunks of 64 KiB. */
export async function* uploadParts(
  connectionId: string,
  file: Uint8Array | string,
  contentEncoding = 'identity',
) {
  yield { part: { case: 'start' as const, value: { connectionId, contentEncoding } } };
  const bytes = typeof file === 'string' ? Buffer.from(file) : file;
  for (let offset = 0; offset < bytes.length; offset += 64 * 1024) {
    yield { part: { case: 'chunk' as const, value: bytes.subarray(offset, offset + 64 * 1024) } };
  }
}

/**
 * The physical line each record of a CSV file starts on, as an editor numbers them (index 0 is the
 * header, on line 1 unless blank lines come first): where csv-parse sees the record end, less the line
 * breaks inside its quoted fields. Blank lines are skipped, as the costs service skips them; write
 * embedded line breaks as `\n` (csv-parse counts the `\r` of a quoted `\r\n` as a line of its own).
 */
export function recordLines(file: Uint8Array | string): number[] {
  const records = parse(file, {
    info: true,
    skip_empty_lines: true,
    relax_column_count: true,
  }) as unknown as Array<{
    record: string[];
    info: { lines: number };
  }>;
  return records.map(
    ({ record, info }) => info.lines - record.reduce((sum, field) => sum + field.split('\n').length - 1, 0),
  );
}

const nullText = (value: string | null | undefined) =>
  value === undefined || value === null || value === '' || value.toLowerCase() === 'null';

/**
 * Whether a FOCUS row is usage-based by the rule docs/decisions.md writes down, read by the tests on
 * their own (never costs' SQL): `ChargeCategory` `Usage` and `ChargeFrequency` `Usage-Based`, in any
 * case; a null column (absent, empty, `NULL`, `null`) does not decide, so a row with neither is usage.
 */
export function usageBased(
  category: string | null | undefined,
  frequency: string | null | undefined,
): boolean {
  const categoryIsUsage = nullText(category) || category!.toLowerCase() === 'usage';
  const frequencyIsUsage = nullText(frequency) || frequency!.toLowerCase() === 'usage-based';
  return categoryIsUsage && frequencyIsUsage;
}
