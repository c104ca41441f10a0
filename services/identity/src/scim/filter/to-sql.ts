import { invalidFilter } from './lexer';
import type { FilterAttribute, FilterNode, FilterOp } from './parser';

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
  /**
   * For a sub-attribute of a multi-valued attribute ('emails.value'): the comparison on one element, and
   * how elements are reached, so that every comparison of a value path applies to the same element.
   */
  element?: {
    sql: (op: FilterOp, param: string) => string;
    absent: string;
    /** SQL true when some element satisfies `condition`. */
    exists: (condition: string) => string;
  };
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
  const specOf = (attribute: string): AttributeSpec => {
    const spec = Object.hasOwn(allowed, attribute) ? allowed[attribute] : undefined;
    if (!spec) throw invalidFilter(`unknown or unsupported attribute '${attribute}'`);
    return spec;
  };
  // Inside a value path, comparisons are on one element of the multi-valued attribute.
  const walk = (n: FilterNode, inElement: boolean): string => {
    if (n.kind === 'and') return `(${walk(n.left, inElement)} AND ${walk(n.right, inElement)})`;
    if (n.kind === 'valuePath') {
      const sub = Object.keys(allowed).find((k) => k.startsWith(`${n.attribute}.`) && allowed[k]?.element);
      const element = sub === undefined ? undefined : allowed[sub]?.element;
      if (!element) throw invalidFilter(`'${n.attribute}' takes no value filter`);
      return `(${element.exists(walk(n.filter, true))})`;
    }
    const spec = specOf(n.attribute);
    const target = inElement ? spec.element : spec;
    if (!target) throw invalidFilter(`'${n.attribute}' cannot be used inside a value filter`);
    if (n.value === null) return `(${target.absent ?? 'FALSE'})`;
    let value: unknown = n.value;
    if (typeof value === 'string') {
      if (!spec.caseExact) value = value.toLowerCase();
      if (n.op !== 'eq') value = likeEscape(value as string);
    }
    params.push(value);
    return `(${target.sql(n.op, `$${firstParamIndex + params.length - 1}`)})`;
  };
  return { sql: walk(node, false), params };
}
