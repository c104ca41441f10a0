/**
 * The one rule for every string the API accepts: valid Unicode (no lone UTF-16 surrogates, which is
 * what invalid UTF-8 or a cut emoji becomes), no NUL or other C0 control except tab, newline and
 * carriage return, and lengths counted in characters (code points), not UTF-16 units.
 */

// Lone surrogates, and C0 controls other than \t \n \r.
const forbidden =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/u;

/** Why `value` is not acceptable text, or undefined when it is. */
export function textProblem(value: string): string | undefined {
  const match = forbidden.exec(value);
  if (!match) return undefined;
  const unit = match[0].charCodeAt(0);
  if (unit === 0) return 'must not contain NUL characters';
  if (unit < 0x20)
    return `must not contain control character U+${unit.toString(16).padStart(4, '0').toUpperCase()}`;
  return 'must be valid Unicode (UTF-8)';
}

/** Length in characters (code points): an emoji counts as one. */
export function charLength(value: string): number {
  let length = 0;
  for (const _ of value) length++;
  return length;
}

/** `value` cut to at most `max` characters without splitting a surrogate pair. */
export function truncateChars(value: string, max: number): string {
  if (value.length <= max) return value;
  let out = '';
  let count = 0;
  for (const char of value) {
    if (count++ >= max) break;
    out += char;
  }
  return out;
}

/** `value` with every lone surrogate replaced by U+FFFD, so it can be encoded as UTF-8 (e.g. a gRPC status). */
export const wellFormed = (value: string): string => value.toWellFormed();
