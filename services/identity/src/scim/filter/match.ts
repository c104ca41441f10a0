import type { FilterAttribute, FilterNode } from './parser';

/** Evaluates a filter against one value in memory (PATCH value filters such as `emails[type eq "work"]`). */
export function matchesFilter(
  node: FilterNode,
  allowed: Readonly<Record<string, FilterAttribute>>,
  read: (attribute: string) => string | boolean | undefined,
): boolean {
  if (node.kind === 'and')
    return matchesFilter(node.left, allowed, read) && matchesFilter(node.right, allowed, read);
  // The parser builds value paths only where `allowed` has multi-valued attributes, which PATCH filters
  // (one element at a time) never have.
  if (node.kind === 'valuePath') return false;
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
