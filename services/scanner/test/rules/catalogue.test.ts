import { describe, expect, it } from 'vitest';
import { allRules, rules } from '../../src/rules/catalogue';

describe('the rule catalogue', () => {
  it('has at least twelve rules with unique ids and every field a person needs', () => {
    expect(allRules.length).toBeGreaterThanOrEqual(12);
    expect(new Set(rules.map((rule) => rule.id)).size).toBe(rules.length);
    for (const rule of rules) {
      expect(rule.id).toMatch(/^[a-z]+(-[a-z]+)+$/);
      expect(['low', 'medium', 'high', 'critical']).toContain(rule.severity);
      expect(['tags', 'commitments', 'compute', 'storage', 'network', 'spend']).toContain(rule.category);
      for (const text of [rule.title, rule.description, rule.recommendation, rule.needs, rule.neverFlags])
        expect(text.length).toBeGreaterThan(10);
      // How it computes savings, or "none".
      expect(rule.savings).toMatch(/^none|.{20}/);
    }
  });

  it('keeps results of empty data empty', () => {
    const empty = {
      windowStart: '2024-09-01T00:00:00.000Z',
      windowEnd: '2024-10-01T00:00:00.000Z',
      currency: 'USD',
      resources: [],
      totals: [],
      daily: [],
      tagUsage: [],
      commitments: [],
      dataStart: '',
      dataEnd: '',
    };
    for (const rule of allRules)
      expect(
        rule.evaluate(empty, {
          requiredTags: ['team'],
          now: new Date(),
          currency: 'USD',
          minDailyImpact: 50,
        }),
      ).toEqual([]);
  });
});
