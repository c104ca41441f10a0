/** The cost posture's arithmetic (DESIGN.md "Cost posture"): pure, so the tables of tests pin it down. */

export const MAX_SCORE = 100;

/** Points of each part; they add up to MAX_SCORE. */
export const WEIGHTS = { budgetCompliance: 40, tagCoverage: 30, recommendationAdoption: 30 } as const;

export interface PostureInputs {
  /** Non-archived budgets of the scope, and how many of them are breached. */
  budgets: { active: number; breached: number };
  /** Share (0..1) of the scope's cost carrying every required tag; null when the team requires no tag. */
  tagCoverage: number | null;
  /** Findings of the scope, and how many are resolved or suppressed. */
  findings: { total: number; adopted: number };
}

export interface Breakdown {
  budgetCompliance: number;
  tagCoverage: number;
  recommendationAdoption: number;
}

export type Grade = 'A' | 'B' | 'C' | 'D' | 'F';
export type Trend = 'improving' | 'declining' | 'stable';

/** A share with nothing to measure gets full marks: no budget is breached, no tag is missing, nothing is left to adopt. */
const share = (part: number, whole: number) => (whole > 0 ? Math.min(1, Math.max(0, part / whole)) : 1);

/**
 * Integer points per part that add up to the rounded exact score (largest remainder: the parts whose
 * fractions were cut most get the points rounding left over).
 */
export function breakdownOf(inputs: PostureInputs): Breakdown {
  const budgetsCounted = inputs.budgets.active + inputs.budgets.breached;
  const exact = {
    budgetCompliance: WEIGHTS.budgetCompliance * share(inputs.budgets.active, budgetsCounted),
    tagCoverage: WEIGHTS.tagCoverage * (inputs.tagCoverage === null ? 1 : share(inputs.tagCoverage, 1)),
    recommendationAdoption:
      WEIGHTS.recommendationAdoption * share(inputs.findings.adopted, inputs.findings.total),
  };
  const parts = Object.keys(exact) as Array<keyof Breakdown>;
  const total = Math.round(parts.reduce((sum, part) => sum + exact[part], 0) + 1e-9);
  const points: Breakdown = {
    budgetCompliance: Math.floor(exact.budgetCompliance + 1e-9),
    tagCoverage: Math.floor(exact.tagCoverage + 1e-9),
    recommendationAdoption: Math.floor(exact.recommendationAdoption + 1e-9),
  };
  let left = total - parts.reduce((sum, part) => sum + points[part], 0);
  const byRemainder = [...parts].sort((a, b) => exact[b] - points[b] - (exact[a] - points[a]));
  for (const part of byRemainder) {
    if (left <= 0) break;
    points[part] += 1;
    left -= 1;
  }
  return points;
}

export const scoreOf = (breakdown: Breakdown): number =>
  breakdown.budgetCompliance + breakdown.tagCoverage + breakdown.recommendationAdoption;

export function gradeOf(score: number): Grade {
  if (score >= 90) return 'A';
  if (score >= 80) return 'B';
  if (score >= 70) return 'C';
  if (score >= 60) return 'D';
  return 'F';
}

/** Against the score seven days earlier; a change under 3 points, or no earlier posture, is stable. */
export function trendOf(score: number, earlier: number | null): Trend {
  if (earlier === null || Math.abs(score - earlier) < 3) return 'stable';
  return score > earlier ? 'improving' : 'declining';
}
