import { charLength, textProblem, truncateChars } from '@costgov/errors';
import { ScimError } from '../errors';

/** Tokens of a SCIM filter; positions count characters from 1. */
export type Token =
  | { kind: '(' | ')' | '[' | ']' | 'end'; pos: number }
  | { kind: 'word'; text: string; pos: number }
  | { kind: 'string'; value: string; pos: number };

export const invalidFilter = (detail: string) => new ScimError(400, 'invalidFilter', detail);

/** How much of a string value an error message quotes, in characters. */
const quotedLength = 40;

/**
 * Splits a filter into tokens. It walks code points, not UTF-16 units: an emoji is one character, never
 * cut in half into a message (a lone surrogate cannot be encoded as UTF-8).
 */
export function tokenize(input: string): Token[] {
  const chars = Array.from(input);
  const tokens: Token[] = [];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i]!;
    const pos = i + 1;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ kind: c, pos });
      i += 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < chars.length && chars[j] !== '"') j += chars[j] === '\\' ? 2 : 1;
      if (j >= chars.length) throw invalidFilter(`unterminated string starting at position ${pos}`);
      const literal = chars.slice(i, j + 1).join('');
      let value: unknown;
      try {
        value = JSON.parse(literal);
      } catch {
        throw invalidFilter(`invalid string ${quoted(literal)} at position ${pos}: not a valid JSON string`);
      }
      const problem = textProblem(value as string);
      if (problem) throw invalidFilter(`the string at position ${pos} ${problem}`);
      tokens.push({ kind: 'string', value: value as string, pos });
      i = j + 1;
    } else if (/[A-Za-z0-9_:.$-]/.test(c)) {
      let j = i;
      while (j < chars.length && /[A-Za-z0-9_:.$-]/.test(chars[j]!)) j += 1;
      tokens.push({ kind: 'word', text: chars.slice(i, j).join(''), pos });
      i = j;
    } else if (c === "'") {
      throw invalidFilter(`unexpected "'" at position ${pos}: strings must be in double quotes`);
    } else {
      throw invalidFilter(`unexpected character '${c}' at position ${pos}`);
    }
  }
  tokens.push({ kind: 'end', pos: chars.length + 1 });
  return tokens;
}

/** At most `quotedLength` characters of `text`, marked when cut. */
export const quoted = (text: string): string =>
  charLength(text) > quotedLength ? `${truncateChars(text, quotedLength)}…` : text;

/** A token as error messages show it. */
export function shown(token: Token): string {
  switch (token.kind) {
    case 'word':
      return `'${quoted(token.text)}'`;
    case 'string':
      return `string ${quoted(JSON.stringify(token.value))}`;
    case 'end':
      return 'end of filter';
    default:
      return `'${token.kind}'`;
  }
}
