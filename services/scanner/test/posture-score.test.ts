import { describe, expect, it } from 'vitest';
import { postureDay } from '../src/posture/dates';
import {
  breakdownOf,
  gradeOf,
  maxScoreOf,
  scoreOf,
  SCORING_VERSION,
  trendOf,
  WEIGHTS,
  type PostureInputs,
} from '../src/posture/score';

const inputs = (over: Partial<PostureInputs>): PostureInputs => ({
  budgets: null,
  tagCoverage: null,
  findings: null,
  ...over,
});

describe('posture arithmetic', () => {
  it.each([
    ['nothing to measure: every part left out', inputs({}), [null, null, null]],
    [
      'no budget is nothing to measure, like none at all',
      inputs({ budgets: { active: 0, breached: 0 } }),
      [null, null, null],
    ],
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
      'a team requiring no tag and never scanned: budgets only',
      inputs({ budgets: { active: 1, breached: 1 } }),
      [20, null, null],
    ],
    [
      'scanned, nothing raised: full adoption marks',
      inputs({ findings: { total: 0, adopted: 0 } }),
      [null, null, 30],
    ],
    // 30*2/3 = 20 and 30/3 = 10 exactly; 40 left out.
    [
      'no budget: tags and adoption only',
      inputs({ tagCoverage: 2 / 3, findings: { total: 3, adopted: 1 } }),
      [null, 20, 10],
    ],
  ])('%s', (_name, given, [budget, tags, adoption]) => {
    const breakdown = breakdownOf(given);
    expect(breakdown).toEqual({
      budgetCompliance: budget,
      tagCoverage: tags,
      recommendationAdoption: adoption,
    });
    expect(scoreOf(breakdown)).toBe((budget ?? 0) + (tags ?? 0) + (adoption ?? 0));
    const measuredMax = (budget === null ? 0 : 40) + (tags === null ? 0 : 30) + (adoption === null ? 0 : 30);
    expect(maxScoreOf(breakdown)).toBe(measuredMax);
  });

  it('the measured parts always add up to the rounded exact score, out of their maxima', () => {
    for (const leftOut of [[], ['budgets'], ['tagCoverage'], ['findings'], ['budgets', 'findings']])
      for (let active = 0; active <= 7; active++) {
        for (let adopted = 0; adopted <= 7; adopted++) {
          for (const coverage of [0, 0.123, 0.5, 0.777, 1]) {
            const given = inputs({
              budgets: leftOut.includes('budgets') ? null : { active, breached: 7 - active },
              tagCoverage: leftOut.includes('tagCoverage') ? null : coverage,
              findings: leftOut.includes('findings') ? null : { total: 7, adopted },
            });
            const exact =
              (given.budgets ? (40 * active) / 7 : 0) +
              (given.tagCoverage === null ? 0 : 30 * coverage) +
              (given.findings ? (30 * adopted) / 7 : 0);
            const max =
              (given.budgets ? 40 : 0) + (given.tagCoverage === null ? 0 : 30) + (given.findings ? 30 : 0);
            const breakdown = breakdownOf(given);
            expect(scoreOf(breakdown)).toBe(Math.round(exact));
            expect(maxScoreOf(breakdown)).toBe(max);
            for (const [part, weight] of Object.entries(WEIGHTS)) {
              const points = breakdown[part as keyof typeof WEIGHTS];
              if (points !== null) expect(points).toBeLessThanOrEqual(weight);
            }
          }
        }
      }
  });
});

describe('grades, from score / max_score', () => {
  it.each([
    [100, 100, 'A'],
    [90, 100, 'A'],
    [89, 100, 'B'],
    [80, 100, 'B'],
    [79, 100, 'C'],
    [70, 100, 'C'],
    [69, 100, 'D'],
    [60, 100, 'D'],
    [59, 100, 'F'],
    [0, 100, 'F'],
    // Out of 30 (only adoption measured): 27 is 90 % exactly, 26 is 86.7 %.
    [27, 30, 'A'],
    [26, 30, 'B'],
    [18, 30, 'D'],
    [17, 30, 'F'],
    // Out of 70 (no budget): 63 is 90 %, 62 is 88.6 %.
    [63, 70, 'A'],
    [62, 70, 'B'],
    [0, 0, null],
  ])('%i of %i is %s', (score, max, grade) => expect(gradeOf(score, max)).toBe(grade));
});

describe('trend, as shares of each posture’s maximum', () => {
  it.each([
    [80, 100, null, 'stable'],
    [80, 100, [78, 100], 'stable'],
    [80, 100, [82, 100], 'stable'],
    [80, 100, [77, 100], 'improving'],
    [77, 100, [80, 100], 'declining'],
    [100, 100, [0, 100], 'improving'],
    // The first scan adds a part: 40/40 before, 60/70 (85.7 %) after, a decline of 14.3 points.
    [60, 70, [40, 40], 'declining'],
    // 27 of 30 (90 %) against 88 of 100: stable.
    [27, 30, [88, 100], 'stable'],
    [0, 0, [50, 100], 'stable'],
    [50, 100, [0, 0], 'stable'],
  ] as const)('%i of %i against %j is %s', (score, maxScore, earlier, trend) =>
    expect(
      trendOf(
        { score, maxScore, version: SCORING_VERSION },
        earlier && { score: earlier[0], maxScore: earlier[1], version: SCORING_VERSION },
      ),
    ).toBe(trend),
  );

  it('compares only postures scored by the same rule', () => {
    // 60 of 100 against 100 of 100 would be a decline of 40 points, had both been scored alike.
    const now = { score: 60, maxScore: 100, version: SCORING_VERSION };
    expect(trendOf(now, { score: 100, maxScore: 100, version: SCORING_VERSION })).toBe('declining');
    expect(trendOf(now, { score: 100, maxScore: 100, version: SCORING_VERSION - 1 })).toBe('stable');
  });
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
