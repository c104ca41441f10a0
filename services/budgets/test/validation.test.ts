import { describe, expect, it } from 'vitest';
import { ValidationError, Violations } from '@costgov/errors';
import { checkApprovalRules, checkName } from '../src/projects/validation';

const fieldsOf = (check: (violations: Violations) => void): string[] => {
  const violations = new Violations();
  check(violations);
  try {
    violations.throwIfAny();
    return [];
  } catch (error) {
    return (error as ValidationError).details.map((d) => d.field);
  }
};

describe('project name', () => {
  it.each([
    ['200 characters', 'x'.repeat(200), []],
    ['200 emoji (400 UTF-16 units)', '\u{1F600}'.repeat(200), []],
    ['201 characters', 'x'.repeat(201), ['name']],
    ['a NUL', 'a\u0000b', ['name']],
    ['a control character', 'a\u001bb', ['name']],
    ['a lone surrogate', 'a\ud800b', ['name']],
    ['blanks only', ' \t ', ['name']],
  ])('with %s', (_case, name, fields) => {
    expect(fieldsOf((v) => checkName(v, name))).toEqual(fields);
  });
});

describe('approval rules', () => {
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `user-${i}`);
  it.each([
    ['no amount', { approvers: ids(1) }, []],
    ['a null amount', { requireApprovalAbove: null, approvers: ids(1) }, []],
    ['amount 0 and 50 approvers', { requireApprovalAbove: 0, approvers: ids(50) }, []],
    ['no approvers', { approvers: [] }, ['approval_rules.approvers']],
    ['51 approvers', { approvers: ids(51) }, ['approval_rules.approvers']],
    [
      'a negative amount',
      { requireApprovalAbove: -1, approvers: ids(1) },
      ['approval_rules.require_approval_above'],
    ],
    [
      'an infinite amount',
      { requireApprovalAbove: Infinity, approvers: ids(1) },
      ['approval_rules.require_approval_above'],
    ],
    ['an approver id with a lone surrogate', { approvers: ['u\udc00'] }, ['approval_rules.approvers[0]']],
    ['an approver id of 201 characters', { approvers: ['é'.repeat(201)] }, ['approval_rules.approvers[0]']],
  ])('with %s', (_case, rules, fields) => {
    expect(fieldsOf((v) => checkApprovalRules(v, rules))).toEqual(fields);
  });

  it('keeps a missing amount as null (no amount limit) and each approver once', () => {
    expect(checkApprovalRules(new Violations(), { approvers: ['a', 'b', 'a'] })).toEqual({
      requireApprovalAbove: null,
      approvers: ['a', 'b'],
    });
  });
});
