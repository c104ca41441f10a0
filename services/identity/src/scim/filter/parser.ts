import { charLength, textProblem } from '@costgov/errors';
import type { ScimError } from '../errors';
import { invalidFilter, quoted, shown, tokenize, type Token } from './lexer';

/**
 * SCIM filters (RFC 7644 §3.4.2.2), the subset this service supports: `eq`, `co` and `sw` comparisons
 * joined by `and`, with parentheses, and value paths on multi-valued attributes (`emails[type eq "work"]`,
 * also in Entra's form `emails[type eq "work"].value eq "x"`). A tokenizer and a recursive-descent parser
 * build a tree; the tree is translated to parameterised SQL by `filterToSql`, or evaluated in memory (PATCH
 * value filters).
 *
 * Grammar:   expr := term ('and' term)*
 *            term := '(' expr ')' | attrPath op value | valuePath
 *            valuePath := attr '[' expr ']' ['.' subAttr op value]    (sub-attributes inside the brackets)
 *            op   := 'eq' | 'co' | 'sw'                      (case-insensitive)
 *            value:= JSON string | true | false | null
 *
 * Positions in error messages count characters from 1.
 */

export type FilterOp = 'eq' | 'co' | 'sw';
export type FilterValue = string | boolean | null;

export type FilterNode =
  | { kind: 'and'; left: FilterNode; right: FilterNode }
  /** One element of a multi-valued attribute matches `filter` (whose attributes are `<attribute>.<sub>`). */
  | { kind: 'valuePath'; attribute: string; filter: FilterNode }
  | {
      kind: 'compare';
      /** Canonical lower-case path without the core schema URN: 'username', 'name.familyname', 'emails.value'. */
      attribute: string;
      op: FilterOp;
      value: FilterValue;
    };

/** What the parser needs to know about an attribute: its type and the RFC 7643 case rule. */
export interface FilterAttribute {
  type: 'string' | 'boolean';
  caseExact: boolean;
  /** A sub-attribute of a multi-valued attribute ('emails.value'), usable inside a value path. */
  multiValued?: boolean;
}

export const maxFilterLength = 1000;
export const maxFilterComparisons = 20;

const coreSchemas = [
  'urn:ietf:params:scim:schemas:core:2.0:user',
  'urn:ietf:params:scim:schemas:core:2.0:group',
];
const supportedOps: ReadonlySet<string> = new Set(['eq', 'co', 'sw']);
const unsupportedOps: ReadonlySet<string> = new Set(['ne', 'ew', 'gt', 'ge', 'lt', 'le', 'pr', 'or', 'not']);

/** The canonical form of an attribute path: lower-case, without the core User or Group schema URN. */
export function canonicalAttribute(path: string): string {
  const lower = path.toLowerCase();
  for (const schema of coreSchemas) {
    if (lower.startsWith(`${schema}:`)) return lower.slice(schema.length + 1);
  }
  return lower;
}

class Parser {
  private index = 0;
  private comparisons = 0;
  /** Inside a value path's brackets: the multi-valued attribute whose sub-attributes are named there. */
  private parent: string | undefined;

  constructor(
    private readonly tokens: Token[],
    private readonly allowed: Readonly<Record<string, FilterAttribute>>,
  ) {}

  parse(): FilterNode {
    const node = this.expr();
    const next = this.peek();
    if (next.kind === ')' || next.kind === ']') {
      throw invalidFilter(`unbalanced '${next.kind}' at position ${next.pos}`);
    }
    if (next.kind !== 'end') {
      throw invalidFilter(`unexpected ${shown(next)} at position ${next.pos}; expected 'and' or the end`);
    }
    return node;
  }

  private peek(): Token {
    return this.tokens[this.index] ?? { kind: 'end', pos: 0 };
  }

  private next(): Token {
    const token = this.peek();
    this.index += 1;
    return token;
  }

  private isWord(token: Token, word: string): boolean {
    return token.kind === 'word' && token.text.toLowerCase() === word;
  }

  private expr(): FilterNode {
    let node = this.term();
    for (;;) {
      const next = this.peek();
      if (this.isWord(next, 'and')) {
        this.next();
        node = { kind: 'and', left: node, right: this.term() };
      } else if (next.kind === 'word' && unsupportedOps.has(next.text.toLowerCase())) {
        throw unsupported(next.text, next.pos);
      } else {
        return node;
      }
    }
  }

  private term(): FilterNode {
    const token = this.next();
    if (token.kind === '(') {
      const node = this.expr();
      const close = this.next();
      if (close.kind !== ')') {
        throw invalidFilter(
          `missing ')' for the '(' at position ${token.pos}: found ${shown(close)} at position ${close.pos}`,
        );
      }
      return node;
    }
    if (token.kind !== 'word') {
      throw invalidFilter(`expected an attribute name at position ${token.pos}, found ${shown(token)}`);
    }
    if (this.isWord(token, 'not')) throw unsupported(quoted(token.text), token.pos);
    if (this.peek().kind === '[') return this.valuePath(token);
    return this.comparison(token);
  }

  private valuePath(attrToken: Extract<Token, { kind: 'word' }>): FilterNode {
    const open = this.next();
    const parent = canonicalAttribute(attrToken.text);
    if (this.parent !== undefined) {
      throw invalidFilter(`a value filter inside a value filter (position ${open.pos}) is not supported`);
    }
    const multiValued = [
      ...new Set(
        Object.entries(this.allowed)
          .filter(([, spec]) => spec.multiValued)
          .map(([name]) => name.split('.')[0]!),
      ),
    ];
    if (!multiValued.includes(parent)) {
      throw invalidFilter(
        `'${quoted(attrToken.text)}' at position ${attrToken.pos} takes no value filter; ` +
          (multiValued.length > 0
            ? `multi-valued attributes that do: ${multiValued.join(', ')}`
            : 'no attribute here does'),
      );
    }
    this.parent = parent;
    const inner = this.expr();
    const close = this.next();
    if (close.kind !== ']') {
      throw invalidFilter(
        `missing ']' for the '[' at position ${open.pos}: found ${shown(close)} at position ${close.pos}`,
      );
    }
    let filter = inner;
    const after = this.peek();
    // Entra's form: emails[type eq "work"].value eq "x" is emails[type eq "work" and value eq "x"].
    if (after.kind === 'word' && after.text.startsWith('.')) {
      this.next();
      filter = { kind: 'and', left: inner, right: this.comparison({ ...after, text: after.text.slice(1) }) };
    }
    this.parent = undefined;
    return { kind: 'valuePath', attribute: parent, filter };
  }

  private comparison(attrToken: Extract<Token, { kind: 'word' }>): FilterNode {
    const name = canonicalAttribute(attrToken.text);
    const attribute = this.parent === undefined ? name : `${this.parent}.${name}`;
    // Own properties only: 'constructor' must not find Object.prototype.constructor.
    const spec = Object.hasOwn(this.allowed, attribute) ? this.allowed[attribute] : undefined;
    if (!spec) {
      throw invalidFilter(
        `unknown or unsupported attribute '${quoted(attrToken.text)}' at position ${attrToken.pos}; ` +
          `supported: ${Object.keys(this.allowed).join(', ')}`,
      );
    }

    const opToken = this.next();
    if (opToken.kind !== 'word') {
      throw invalidFilter(
        `expected an operator (eq, co, sw) after '${quoted(attrToken.text)}' at position ${opToken.pos}, ` +
          `found ${shown(opToken)}`,
      );
    }
    const op = opToken.text.toLowerCase();
    if (unsupportedOps.has(op)) throw unsupported(quoted(opToken.text), opToken.pos);
    if (!supportedOps.has(op)) {
      throw invalidFilter(
        `unknown operator '${quoted(opToken.text)}' at position ${opToken.pos}; supported: eq, co, sw`,
      );
    }

    const valueToken = this.next();
    const value = literal(valueToken, opToken.text);
    const where = `'${quoted(attrToken.text)} ${quoted(opToken.text)}' at position ${attrToken.pos}`;
    if (value === null && op !== 'eq') throw invalidFilter(`null can only be compared with eq: ${where}`);
    if (spec.type === 'boolean') {
      if (op !== 'eq') {
        throw invalidFilter(
          `operator '${quoted(opToken.text)}' cannot be used on boolean attribute: ${where}`,
        );
      }
      if (typeof value === 'string') {
        throw invalidFilter(`boolean attribute compared with a string; use true or false: ${where}`);
      }
    } else if (typeof value === 'boolean') {
      throw invalidFilter(`string attribute compared with ${value}; use a quoted string: ${where}`);
    }

    this.comparisons += 1;
    if (this.comparisons > maxFilterComparisons) {
      throw invalidFilter(
        `too many comparisons: more than ${maxFilterComparisons} (at position ${attrToken.pos})`,
      );
    }
    return { kind: 'compare', attribute, op: op as FilterOp, value };
  }
}

function unsupported(text: string, pos: number): ScimError {
  return invalidFilter(
    `unsupported operator '${text}' at position ${pos}; supported: eq, co, sw joined by and`,
  );
}

function literal(token: Token, opText: string): FilterValue {
  if (token.kind === 'string') return token.value;
  if (token.kind === 'word') {
    const word = token.text.toLowerCase();
    if (word === 'true') return true;
    if (word === 'false') return false;
    if (word === 'null') return null;
    if (/^-?[0-9]/.test(word)) {
      throw invalidFilter(`numeric value ${quoted(token.text)} at position ${token.pos} is not supported`);
    }
  }
  throw invalidFilter(
    `expected a value (a quoted string, true, false or null) after '${quoted(opText)}' at position ${token.pos}, ` +
      `found ${shown(token)}`,
  );
}

/** Parses a SCIM filter; every malformed or unsupported filter is a 400 `invalidFilter`. */
export function parseFilter(input: string, allowed: Readonly<Record<string, FilterAttribute>>): FilterNode {
  if (typeof input !== 'string' || input.trim() === '') throw invalidFilter('empty filter');
  const length = charLength(input);
  if (length > maxFilterLength) {
    throw invalidFilter(`filter too long: ${length} characters, at most ${maxFilterLength}`);
  }
  const problem = textProblem(input);
  if (problem) throw invalidFilter(`the filter ${problem}`);
  return new Parser(tokenize(input), allowed).parse();
}
