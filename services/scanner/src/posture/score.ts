/**
 * The cost posture's arithmetic (DESIGN.md "Cost posture", docs/decisions.md "A posture that does not
 * reward absence"): pure, so the tables of tests pin it down.
 */

/**
 * The rule a posture was scored by, kept with each snapshot. 1: every part always scored (an unmeasured
 * part got full marks; snapshots without a version); 2: unmeasured parts left out, budgets only with
 * data, adoption over the findings open in the window. The trend compares only postures of one version:
 * across a change of rule the score moves without anything having changed.
 */
export const SCORING_VERSION = 2;

/** Points of each part; a posture measuring every part is out of their sum, 100. */
export const WEIGHTS = { budgetCompliance: 40, tagCoverage: 30, recommendationAdoption: 30 } as const;

export type Part = keyof typeof WEIGHTS;
const parts = Object.keys(WEIGHTS) as Part[];

/** Each part's input; null when the part has nothing to measure and is left out. */
export interface PostureInputs {
  /**
   * Non-archived budgets of the scope with data in their current period (`data_through` set), and how
   * many of them are breached; null when there is none.
   */
  budgets: { active: number; breached: number } | null;
  /**
   * Share (0..1) of the scope's taggable cost of the window carrying every required tag key; null when
   * the team requires no tag or there is no taggable cost in the window.
   */
  tagCoverage: number | null;
  /**
   * Findings open at some point in the window (a scan's resolution for want of its resource left out),
   * and how many of them were dealt with (suppressed, or resolved while their resource is still billed);
   * null when no scan completed in the window and there is no such finding.
   */
  findings: { total: number; adopted: number } | null;
}

/** Points per part; null for a part left out (nothing to measure). */
export type Breakdown = Record<Part, number | null>;

export type Grade = 'A' | 'B' | 'C' | 'D' | 'F';
export type Trend = 'improving' | 'declining' | 'stable';

const share = (part: number, whole: number) => (whole > 0 ? Math.min(1, Math.max(0, part / whole)) : 1);

/** The exact (fractional) points of each measured part. */
function exactOf(inputs: PostureInputs): Breakdown {
  const { budgets, tagCoverage, findings } = inputs;
  return {
    budgetCompliance:
      budgets === null || budgets.active + budgets.breached === 0
        ? null
        : WEIGHTS.budgetCompliance * share(budgets.active, budgets.active + budgets.breached),
    tagCoverage: tagCoverage === null ? null : WEIGHTS.tagCoverage * share(tagCoverage, 1),
    recommendationAdoption:
      findings === null ? null : WEIGHTS.recommendationAdoption * share(findings.adopted, findings.total),
  };
}

/**
 * Integer points per measured part that add up to the rounded exact score (largest remainder: the parts
 * whose fractions were cut most get the points rounding left over); null for a part left out.
 */
export function breakdownOf(inputs: PostureInputs): Breakdown {
  const exact = exactOf(inputs);
  const measured = parts.filter((part) => exact[part] !== null);
  const value = (part: Part) => exact[part] ?? 0;
  const total = Math.round(measured.reduce((sum, part) => sum + value(part), 0) + 1e-9);
  const points: Breakdown = { budgetCompliance: null, tagCoverage: null, recommendationAdoption: null };
  for (const part of measured) points[part] = Math.floor(value(part) + 1e-9);
  let left = total - measured.reduce((sum, part) => sum + points[part]!, 0);
  const byRemainder = [...measured].sort((a, b) => value(b) - points[b]! - (value(a) - points[a]!));
  for (const part of byRemainder) {
    if (left <= 0) break;
    points[part]! += 1;
    left -= 1;
  }
  return points;
}

/** The sum of the measured parts' points. */
export const scoreOf = (breakdown: Breakdown): number =>
  parts.reduce((sum, part) => sum + (breakdown[part] ?? 0), 0);

/** The sum of the measured parts' maxima: 100 when every part is measured, 0 when none is. */
export const maxScoreOf = (breakdown: Breakdown): number =>
  parts.reduce((sum, part) => sum + (breakdown[part] === null ? 0 : WEIGHTS[part]), 0);

/**
 * The grade of score / maxScore: A from 90 %, B from 80 %, C from 70 %, D from 60 %, F below; null when
 * nothing is measured. Compared in integers, so 27 of 30 is exactly 90 %.
 */
export function gradeOf(score: number, maxScore: number): Grade | null {
  if (maxScore <= 0) return null;
  const at = (percent: number) => score * 100 >= percent * maxScore;
  if (at(90)) return 'A';
  if (at(80)) return 'B';
  if (at(70)) return 'C';
  if (at(60)) return 'D';
  return 'F';
}

/**
 * Against the posture seven days earlier, as shares of their own maxima (in points of 100): a change
 * under 3 points, no earlier posture, one scored by another rule (SCORING_VERSION), or either measuring
 * nothing, is stable.
 */
export function trendOf(
  now: { score: number; maxScore: number; version: number },
  earlier: { score: number; maxScore: number; version: number } | null,
): Trend {
  if (earlier === null || earlier.version !== now.version) return 'stable';
  if (now.maxScore <= 0 || earlier.maxScore <= 0) return 'stable';
  const change = (now.score / now.maxScore - earlier.score / earlier.maxScore) * 100;
  if (Math.abs(change) < 3 - 1e-9) return 'stable';
  return change > 0 ? 'improving' : 'declining';
}
