import { ScimError } from './errors';

/**
 * SCIM filters (RFC 7644 §3.4.2.2), the subset this service supports: `eq`, `co` and `sw` comparisons
 * joined by `and`, with parentheses. A tokenizer and a recursive-descent parser build a tree; the tree is
 * translated to parameterised SQL by `filterToSql`, or evaluated in memory (PATCH value filters).
 *
 * Grammar:   expr := term ('and' term)*
 *            term := '(' expr ')' | attrPath op value
 *            op   := 'eq' | 'co' | 'sw'                      (case-insensitive)
 *            value:= JSON string | true | false | null
 *
 * Positions in error messages count characters from 1.
 */

export type FilterOp = 'eq' | 'co' | 'sw';
export type FilterValue = string | boolean | null;

export type FilterNode =
  | { kind: 'and'; left: FilterNode; right: FilterNode }
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
}

/** A filterable attribute backed by SQL. */
export interface AttributeSpec extends FilterAttribute {
  /**
   * SQL that is true when the attribute compares with the parameter. For case-insensitive attributes
   * the parameter is already lower-cased; for co and sw it is LIKE-escaped (escape character `\`), and the
   * builder adds the `%` wildcards itself.
   */
  sql: (op: FilterOp, param: string) => string;
  /**
   * SQL that is true when the attribute has no value (`attr eq null`). Omitted for attributes every
   * resource has, for which `eq null` matches nothing.
   */
  absent?: string;
}

export const maxFilterLength = 1000;
export const maxFilterComparisons = 20;

const coreSchemas = [
  'urn:ietf:params:scim:schemas:core:2.0:user',
  'urn:ietf:params:scim:schemas:core:2.0:group',
];
const supportedOps: ReadonlySet<string> = new Set(['eq', 'co', 'sw']);
const unsupportedOps: ReadonlySet<string> = new Set(['ne', 'ew', 'gt', 'ge', 'lt', 'le', 'pr', 'or', 'not']);

type Token =
  | { kind: '(' | ')' | 'end'; pos: number }
  | { kind: 'word'; text: string; pos: number }
  | { kind: 'string'; value: string; pos: number };

const invalidFilter = (detail: string) => new ScimError(400, 'invalidFilter', detail);

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input.charAt(i);
    const pos = i + 1;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '(' || c === ')') {
      tokens.push({ kind: c, pos });
      i += 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < input.length && input.charAt(j) !== '"') j += input.charAt(j) === '\\' ? 2 : 1;
      if (j >= input.length) throw invalidFilter(`unterminated string starting at position ${pos}`);
      const literal = input.slice(i, j + 1);
      let value: unknown;
      try {
        value = JSON.parse(literal);
      } catch {
        throw invalidFilter(`invalid string ${literal} at position ${pos}: not a valid JSON string`);
      }
      tokens.push({ kind: 'string', value: value as string, pos });
      i = j + 1;
    } else if (/[A-Za-z0-9_:.$-]/.test(c)) {
      let j = i;
      while (j < input.length && /[A-Za-z0-9_:.$-]/.test(input.charAt(j))) j += 1;
      if (input.charAt(j) === '[') {
        throw invalidFilter(
          `value filter '${input.slice(i, j + 1)}' at position ${pos} is not supported; ` +
            `use a dotted attribute such as 'emails.value' or 'members.value'`,
        );
      }
      tokens.push({ kind: 'word', text: input.slice(i, j), pos });
      i = j;
    } else if (c === "'") {
      throw invalidFilter(`unexpected "'" at position ${pos}: strings must be in double quotes`);
    } else {
      throw invalidFilter(`unexpected character '${c}' at position ${pos}`);
    }
  }
  tokens.push({ kind: 'end', pos: input.length + 1 });
  return tokens;
}

function shown(token: Token): string {
  switch (token.kind) {
    case 'word':
      return `'${token.text}'`;
    case 'string':
      return `string ${JSON.stringify(token.value)}`;
    case 'end':
      return 'end of filter';
    default:
      return `'${token.kind}'`;
  }
}

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

  constructor(
    private readonly tokens: Token[],
    private readonly allowed: Readonly<Record<string, FilterAttribute>>,
  ) {}

  parse(): FilterNode {
    const node = this.expr();
    const next = this.peek();
    if (next.kind === ')') throw invalidFilter(`unbalanced ')' at position ${next.pos}`);
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
    if (this.isWord(token, 'not')) throw unsupported(token.text, token.pos);
    return this.comparison(token);
  }

  private comparison(attrToken: Extract<Token, { kind: 'word' }>): FilterNode {
    const attribute = canonicalAttribute(attrToken.text);
    // Own properties only: 'constructor' must not find Object.prototype.constructor.
    const spec = Object.hasOwn(this.allowed, attribute) ? this.allowed[attribute] : undefined;
    if (!spec) {
      throw invalidFilter(
        `unknown or unsupported attribute '${attrToken.text}' at position ${attrToken.pos}; ` +
          `supported: ${Object.keys(this.allowed).join(', ')}`,
      );
    }

    const opToken = this.next();
    if (opToken.kind !== 'word') {
      throw invalidFilter(
        `expected an operator (eq, co, sw) after '${attrToken.text}' at position ${opToken.pos}, ` +
          `found ${shown(opToken)}`,
      );
    }
    const op = opToken.text.toLowerCase();
    if (unsupportedOps.has(op)) throw unsupported(opToken.text, opToken.pos);
    if (!supportedOps.has(op)) {
      throw invalidFilter(
        `unknown operator '${opToken.text}' at position ${opToken.pos}; supported: eq, co, sw`,
      );
    }

    const valueToken = this.next();
    const value = literal(valueToken, opToken.text);
    const where = `'${attrToken.text} ${opToken.text}' at position ${attrToken.pos}`;
    if (value === null && op !== 'eq') throw invalidFilter(`null can only be compared with eq: ${where}`);
    if (spec.type === 'boolean') {
      if (op !== 'eq') {
        throw invalidFilter(`operator '${opToken.text}' cannot be used on boolean attribute: ${where}`);
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
      throw invalidFilter(`numeric value ${token.text} at position ${token.pos} is not supported`);
    }
  }
  throw invalidFilter(
    `expected a value (a quoted string, true, false or null) after '${opText}' at position ${token.pos}, ` +
      `found ${shown(token)}`,
  );
}

/** Parses a SCIM filter; every malformed or unsupported filter is a 400 `invalidFilter`. */
export function parseFilter(input: string, allowed: Readonly<Record<string, FilterAttribute>>): FilterNode {
  if (typeof input !== 'string' || input.trim() === '') throw invalidFilter('empty filter');
  if (input.length > maxFilterLength) {
    throw invalidFilter(`filter too long: ${input.length} characters, at most ${maxFilterLength}`);
  }
  return new Parser(tokenize(input), allowed).parse();
}

/** Escapes LIKE's wildcards and its escape character (`\`). */
export const likeEscape = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Translates a filter tree to a parenthesised SQL condition with numbered placeholders starting at
 * `firstParamIndex` (so the caller can put its own parameters, such as the team id, first).
 */
export function filterToSql(
  node: FilterNode,
  allowed: Readonly<Record<string, AttributeSpec>>,
  firstParamIndex: number,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const walk = (n: FilterNode): string => {
    if (n.kind === 'and') return `(${walk(n.left)} AND ${walk(n.right)})`;
    const spec = Object.hasOwn(allowed, n.attribute) ? allowed[n.attribute] : undefined;
    if (!spec) throw invalidFilter(`unknown or unsupported attribute '${n.attribute}'`);
    if (n.value === null) return `(${spec.absent ?? 'FALSE'})`;
    let value: unknown = n.value;
    if (typeof value === 'string') {
      if (!spec.caseExact) value = value.toLowerCase();
      if (n.op !== 'eq') value = likeEscape(value as string);
    }
    params.push(value);
    return `(${spec.sql(n.op, `$${firstParamIndex + params.length - 1}`)})`;
  };
  return { sql: walk(node), params };
}

/** Evaluates a filter against one value in memory (PATCH value filters such as `emails[type eq "work"]`). */
export function matchesFilter(
  node: FilterNode,
  allowed: Readonly<Record<string, FilterAttribute>>,
  read: (attribute: string) => string | boolean | undefined,
): boolean {
  if (node.kind === 'and')
    return matchesFilter(node.left, allowed, read) && matchesFilter(node.right, allowed, read);
  const actual = read(node.attribute);
  if (node.value === null) return actual === undefined;
  if (typeof node.value === 'boolean') return actual === node.value;
  if (typeof actual !== 'string') return false;
  const caseExact = Object.hasOwn(allowed, node.attribute) && allowed[node.attribute]?.caseExact === true;
  const a = caseExact ? actual : actual.toLowerCase();
  const v = caseExact ? node.value : node.value.toLowerCase();
  if (node.op === 'eq') return a === v;
  return node.op === 'co' ? a.includes(v) : a.startsWith(v);
}

// SQL builders for the identity service's tables. Case-insensitive attributes compare lower(column) with
// a lower-cased parameter, so an index on lower(column) serves eq and sw (text_pattern_ops) and a trigram
// index serves co.

const likeSql = (expression: string, op: FilterOp, param: string): string => {
  if (op === 'eq') return `${expression} = ${param}`;
  const pattern = op === 'co' ? `'%' || ${param}::text || '%'` : `${param}::text || '%'`;
  return `${expression} LIKE ${pattern} ESCAPE '\\'`;
};

const stringColumn = (column: string, caseExact: boolean, optional: boolean): AttributeSpec => ({
  type: 'string',
  caseExact,
  sql: (op, param) => likeSql(caseExact ? column : `lower(${column})`, op, param),
  ...(optional ? { absent: `${column} IS NULL` } : {}),
});

/** Filterable attributes of SCIM Users (table `scim_users`). */
export const userFilterAttributes: Readonly<Record<string, AttributeSpec>> = Object.freeze({
  id: stringColumn('id::text', true, false),
  username: stringColumn('user_name', false, false),
  externalid: stringColumn('external_id', true, true),
  'name.givenname': stringColumn('given_name', false, true),
  'name.familyname': stringColumn('family_name', false, true),
  'emails.value': {
    type: 'string',
    caseExact: false,
    sql: (op, param) =>
      `EXISTS (SELECT 1 FROM jsonb_array_elements(emails) AS e WHERE ${likeSql(
        `lower(e->>'value')`,
        op,
        param,
      )})`,
    absent: `COALESCE(jsonb_array_length(emails), 0) = 0`,
  },
  active: { type: 'boolean', caseExact: true, sql: (_op, param) => `active = ${param}` },
});

/**
 * Filterable attributes of SCIM Groups (table `scim_groups`, members in `scim_group_members`). The
 * membership subqueries name `scim_groups.id`, so the list query must read `FROM scim_groups` unaliased.
 */
export const groupFilterAttributes: Readonly<Record<string, AttributeSpec>> = Object.freeze({
  id: stringColumn('id::text', true, false),
  displayname: stringColumn('display_name', false, false),
  externalid: stringColumn('external_id', true, true),
  'members.value': {
    type: 'string',
    caseExact: true,
    sql: (op, param) =>
      `EXISTS (SELECT 1 FROM scim_group_members AS m WHERE m.group_id = scim_groups.id AND ${likeSql(
        'm.user_id::text',
        op,
        param,
      )})`,
    absent: `NOT EXISTS (SELECT 1 FROM scim_group_members AS m WHERE m.group_id = scim_groups.id)`,
  },
});
