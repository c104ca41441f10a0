import { describe, expect, it } from 'vitest';
import { postureDay } from '../src/posture/dates';
import { breakdownOf, gradeOf, scoreOf, trendOf, type PostureInputs } from '../src/posture/score';

const inputs = (over: Partial<PostureInputs>): PostureInputs => ({
  budgets: { active: 0, breached: 0 },
  tagCoverage: null,
  findings: { total: 0, adopted: 0 },
  ...over,
});

describe('posture arithmetic', () => {
  it.each([
    ['nothing to measure: full marks', inputs({}), [40, 30, 30]],
    [
      'every budget breached, no tag, nothing adopted',
      inputs({ budgets: { active: 0, breached: 3 }, tagCoverage: 0, findings: { total: 4, adopted: 0 } }),
      [0, 0, 0],
    ],
    [
      '3 of 4 budgets fine, half the cost tagged, 1 of 4 findings adopted',
      inputs({ budgets: { active: 3, breached: 1 }, tagCoverage: 0.5, findings: { total: 4, adopted: 1 } }),
      [30, 15, 8],
    ],
    // 40*2/3 = 26.67, 30/3 = 10, 30*2/3 = 20: 56.67 rounds to 57, the point goes to the largest fraction.
    [
      'thirds',
      inputs({ budgets: { active: 2, breached: 1 }, tagCoverage: 1 / 3, findings: { total: 3, adopted: 2 } }),
      [27, 10, 20],
    ],
    // 40/3 = 13.33, 10, 10: 33.33 rounds down to 33.
    [
      'a third everywhere',
      inputs({ budgets: { active: 1, breached: 2 }, tagCoverage: 1 / 3, findings: { total: 3, adopted: 1 } }),
      [13, 10, 10],
    ],
    [
      'a team requiring no tag gets full tag marks',
      inputs({ budgets: { active: 1, breached: 1 }, tagCoverage: null }),
      [20, 30, 30],
    ],
  ])('%s', (_name, given, [budget, tags, adoption]) => {
    const breakdown = breakdownOf(given);
    expect(breakdown).toEqual({
      budgetCompliance: budget,
      tagCoverage: tags,
      recommendationAdoption: adoption,
    });
    expect(scoreOf(breakdown)).toBe(budget! + tags! + adoption!);
  });

  it('the parts always add up to the rounded exact score', () => {
    for (let active = 0; active <= 7; active++) {
      for (let adopted = 0; adopted <= 7; adopted++) {
        for (const coverage of [0, 0.123, 0.5, 0.777, 1]) {
          const exact = (40 * active) / 7 + 30 * coverage + (30 * adopted) / 7;
          const breakdown = breakdownOf(
            inputs({
              budgets: { active, breached: 7 - active },
              tagCoverage: coverage,
              findings: { total: 7, adopted },
            }),
          );
          expect(scoreOf(breakdown)).toBe(Math.round(exact));
          expect(breakdown.budgetCompliance).toBeLessThanOrEqual(40);
          expect(breakdown.tagCoverage).toBeLessThanOrEqual(30);
          expect(breakdown.recommendationAdoption).toBeLessThanOrEqual(30);
        }
      }
    }
  });
});

describe('grades', () => {
  it.each([
    [100, 'A'],
    [90, 'A'],
    [89, 'B'],
    [80, 'B'],
    [79, 'C'],
    [70, 'C'],
    [69, 'D'],
    [60, 'D'],
    [59, 'F'],
    [0, 'F'],
  ])('%i is %s', (score, grade) => expect(gradeOf(score)).toBe(grade));
});

describe('trend', () => {
  it.each([
    [80, null, 'stable'],
    [80, 78, 'stable'],
    [80, 82, 'stable'],
    [80, 77, 'improving'],
    [77, 80, 'declining'],
    [100, 0, 'improving'],
  ])('%i against %s is %s', (score, earlier, trend) => expect(trendOf(score, earlier)).toBe(trend));
});

describe('the day asked', () => {
  it('is today when none is given, and a past or present day as given', () => {
    expect(postureDay('', '2026-11-23')).toBe('2026-11-23');
    expect(postureDay('2026-11-23', '2026-11-23')).toBe('2026-11-23');
    expect(postureDay('2024-02-29', '2026-11-23')).toBe('2024-02-29');
  });

  it.each([
    '2026-11-24',
    '2027-01-01',
    '23-11-2026',
    '2026-1-5',
    '2026-02-30',
    '2026-13-01',
    'today',
    '2026-11-23T00:00',
  ])('%s is a bad request', (day) =>
    expect(() => postureDay(day, '2026-11-23')).toThrow(expect.objectContaining({ code: 'bad_request' })),
  );
});
