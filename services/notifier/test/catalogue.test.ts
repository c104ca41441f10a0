import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  deliverableEventTypes,
  internalEventTypes,
  patternMatches,
  patternProblem,
  publicEventTypes,
} from '../src/events/catalogue';

/** Every event type named in the comments of events.proto, with the message it precedes. */
function protoCatalogue(): Record<string, string> {
  const proto = readFileSync(path.join(__dirname, '../../../proto/costgov/events/v1/events.proto'), 'utf8');
  const types: Record<string, string> = {};
  let named: string[] = [];
  for (const line of proto.split('\n')) {
    if (line.startsWith('//')) named.push(...(line.match(/\b[a-z]+\.[a-z_]+\.[a-z_]+\b/g) ?? []));
    const message = /^message (\w+)/.exec(line)?.[1];
    if (message) {
      for (const type of named) types[type] = message;
      named = [];
    } else if (!line.startsWith('//')) named = [];
  }
  return types;
}

describe('the deliverable catalogue', () => {
  it('is the catalogue of events.proto, payload messages included', () => {
    expect(publicEventTypes).toEqual(protoCatalogue());
  });

  it("leaves out only the scan workers' internal work queue", () => {
    const queue = Object.keys(publicEventTypes).filter((type) =>
      /^scanner\.scan(_shard|_merge)?\.requested$/.test(type),
    );
    expect(queue).toHaveLength(3); // the scan, its shards, its merge
    expect([...internalEventTypes].sort()).toEqual(queue.sort());
    expect(deliverableEventTypes).toHaveLength(Object.keys(publicEventTypes).length - queue.length);
  });
});

describe('patterns', () => {
  it.each([
    ['*', 'violations.violation.created', true],
    ['violations.*', 'violations.violation.created', true],
    ['budgets.budget.*', 'budgets.budget.breached', true],
    ['budgets.budget.*', 'budgets.project.created', false],
    ['budgets.*', 'budgets.budget.threshold_crossed', true],
    ['budgets.budget.breached', 'budgets.budget.breached', true],
    ['budgets.budget.breached', 'budgets.budget.created', false],
  ])('%s matches %s: %s', (pattern, type, expected) => {
    expect(patternMatches(pattern, type)).toBe(expected);
  });

  it.each([
    ['*', undefined],
    ['scanner.finding.*', undefined],
    ['scanner.scan.requested', "'scanner.scan.requested' is internal and not delivered to webhooks"],
    ['budget.*', "'budget.*' matches no deliverable event type"],
    [
      'budgets.bud*',
      "'budgets.bud*' is not a known event type or wildcard ('*', 'violations.*', 'budgets.budget.*')",
    ],
    ['*.*', "'*.*' is not a wildcard of whole tokens (e.g. 'violations.*', 'budgets.budget.*')"],
    [
      'violations.>',
      "'violations.>' is not a known event type or wildcard ('*', 'violations.*', 'budgets.budget.*')",
    ],
  ])('%s: %s', (pattern, problem) => {
    expect(patternProblem(pattern)).toBe(problem);
  });
});
