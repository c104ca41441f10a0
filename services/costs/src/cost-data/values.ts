import { isCurrencyCode } from '../rates/currency-codes';

/**
 * Checks of one FOCUS field by its kind. Each answers undefined when the value is fine, or what is wrong
 * with it in words a person fixing the file can act on.
 */

const decimalPattern = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,4})?$/;

export function decimalProblem(value: string): string | undefined {
  return decimalPattern.test(value) ? undefined : `is not a number: '${shown(value)}'`;
}

export function currencyProblem(value: string): string | undefined {
  return isCurrencyCode(value) ? undefined : `is not an ISO 4217 currency code: '${shown(value)}'`;
}

/** `YYYY-MM-DD HH:MM:SS` (UTC) or ISO 8601 with `T`, optional fraction, and `Z` or an offset. */
const timestampPattern =
  /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))?$/;

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

export function timestampProblem(value: string): string | undefined {
  const match = timestampPattern.exec(value);
  const expected = `is not a timestamp (YYYY-MM-DD HH:MM:SS in UTC, or ISO 8601 with Z or an offset): '${shown(value)}'`;
  if (!match) return expected;
  const [, year, month, day, hour, minute, second = '00', , offsetHours = '00', offsetMinutes = '00'] = match;
  const valid =
    +month! >= 1 &&
    +month! <= 12 &&
    +day! >= 1 &&
    +day! <= daysIn(+year!, +month!) &&
    +hour! <= 23 &&
    +minute! <= 59 &&
    +second <= 59 &&
    +offsetHours <= 14 &&
    +offsetMinutes <= 59;
  return valid ? undefined : expected;
}

/** A checked timestamp as Postgres reads it: one without a zone is UTC (FOCUS requires UTC). */
export function timestampForCopy(value: string): string {
  const zoned = value.endsWith('Z') || /[+-]\d{2}:\d{2}$/.test(value);
  return zoned ? value : `${value}Z`;
}

/** The UTC calendar day of a checked timestamp, YYYY-MM-DD. */
export function utcDayOf(value: string): string {
  if (value.endsWith('Z') || !/[+-]\d{2}:\d{2}$/.test(value)) return value.slice(0, 10);
  return new Date(value.replace(' ', 'T')).toISOString().slice(0, 10);
}

/**
 * `Tags` and `AllocatedTags`: a JSON object in FOCUS's Key-Value Format, whose values are strings,
 * numbers, `true`, `false` or `null` (never an object or an array).
 */
export function tagsProblem(value: string): string | undefined {
  if (value === '{}') return undefined;
  const parsed = parsedObject(value);
  if (typeof parsed === 'string') return parsed;
  for (const key of Object.keys(parsed)) {
    const inner = parsed[key];
    if (inner !== null && typeof inner === 'object') {
      return `tag '${shown(key)}' has ${Array.isArray(inner) ? 'an array' : 'an object'} as its value (FOCUS allows text, numbers, true, false and null)`;
    }
  }
  return undefined;
}

/**
 * Checked tags as stored: every value a string, as tag filters and rules compare them (`1` as "1",
 * `true` as "true", `null` as ""). The text itself when it already is so (nearly always): the check
 * parsed it, and only the rare other file pays for a second parse.
 */
export function tagsStored(value: string): string {
  if (!/:\s*(?:-?\d|true|false|null)/.test(value)) return value;
  const parsed = JSON.parse(value) as Record<string, unknown>;
  let changed = false;
  for (const key of Object.keys(parsed)) {
    const inner = parsed[key];
    if (typeof inner === 'string') continue;
    parsed[key] = inner === null ? '' : String(inner);
    changed = true;
  }
  return changed ? JSON.stringify(parsed) : value;
}

/** A JSON column (e.g. `SkuPriceDetails`): a JSON object. */
export function jsonProblem(value: string): string | undefined {
  const parsed = parsedObject(value);
  return typeof parsed === 'string' ? parsed : undefined;
}

/**
 * `ContractApplied` (FOCUS 1.3): a JSON object whose `Elements` array lists the contract commitments the
 * charge applies to, each with its `ContractId` and `ContractCommitmentId` (strings) and, where given, a
 * numeric `ContractCommitmentAppliedCost` or `ContractCommitmentAppliedQuantity` and a text
 * `ContractCommitmentAppliedUnit`. Custom `x_` keys are allowed anywhere, as the specification says.
 */
export function contractAppliedProblem(value: string): string | undefined {
  const parsed = parsedObject(value);
  if (typeof parsed === 'string') return parsed;
  const elements = parsed.Elements;
  if (!Array.isArray(elements)) return "has no 'Elements' array";
  for (const [index, element] of elements.entries()) {
    const at = `'Elements[${index}]'`;
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      return `${at} is not a JSON object`;
    }
    const entry = element as Record<string, unknown>;
    for (const key of ['ContractId', 'ContractCommitmentId']) {
      if (typeof entry[key] !== 'string' || entry[key] === '') return `${at} has no string '${key}'`;
    }
    for (const key of ['ContractCommitmentAppliedCost', 'ContractCommitmentAppliedQuantity']) {
      if (entry[key] !== undefined && entry[key] !== null && typeof entry[key] !== 'number') {
        return `${at} has a '${key}' that is not a number`;
      }
    }
    const unit = entry.ContractCommitmentAppliedUnit;
    if (unit !== undefined && unit !== null && typeof unit !== 'string') {
      return `${at} has a 'ContractCommitmentAppliedUnit' that is not a string`;
    }
  }
  return undefined;
}

function parsedObject(value: string): Record<string, unknown> | string {
  // Postgres jsonb refuses \u0000; a file carrying it is refused here rather than failing the load.
  if (value.includes('\\u0000')) return 'contains the escape \\u0000, which cannot be stored';
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return `is not valid JSON: '${shown(value)}'`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return `is not a JSON object: '${shown(value)}'`;
  }
  return parsed as Record<string, unknown>;
}

/** A value quoted in a message: long ones cut, so one bad field cannot make a huge answer. */
function shown(value: string): string {
  return value.length > 60 ? `${value.slice(0, 57)}...` : value;
}

const copySpecial = /[\\\t\n\r]/;

/** A field in COPY text format: backslash, tab and line breaks escaped; missing is `\N`. */
export function copyField(value: string | null): string {
  if (value === null) return '\\N';
  if (!copySpecial.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
  );
}
