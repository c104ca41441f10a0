import { percentageUsed, type PeriodRange } from './period';

export interface Threshold {
  percentage: number;
  /** First time spend crossed it in the evaluated period; null until then. */
  notifiedAt: Date | null;
}

/** What an evaluation starts from: the budget as stored. */
export interface EvaluationState {
  status: 'active' | 'breached';
  amount: number;
  thresholds: Threshold[];
  /** Start of the period the stored thresholds belong to; null before the first evaluation. */
  periodStart: Date | null;
}

export interface Outcome {
  status: 'active' | 'breached';
  percentageUsed: number;
  thresholds: Threshold[];
  /** Percentages crossed for the first time in this period by this evaluation, ascending. */
  crossed: number[];
  /** Spend reached 100 % in this period with this evaluation (it was not breached in it before). */
  breached: boolean;
  newPeriod: boolean;
}

/**
 * The decision of one evaluation, pure: a new period clears every notified time and the breach; each
 * threshold at or below the percentage used that is not yet notified is crossed now; the budget is
 * `breached` exactly while the percentage used is 100 or more. Running it again on its own outcome with
 * the same spend crosses nothing.
 */
export function evaluate(state: EvaluationState, spend: number, range: PeriodRange, at: Date): Outcome {
  const newPeriod = state.periodStart?.getTime() !== range.start.getTime();
  const used = percentageUsed(spend, state.amount);
  const crossed: number[] = [];
  const thresholds = state.thresholds.map(({ percentage, notifiedAt }) => {
    const notified = newPeriod ? null : notifiedAt;
    if (notified || used < percentage) return { percentage, notifiedAt: notified };
    crossed.push(percentage);
    return { percentage, notifiedAt: at };
  });
  const status = used >= 100 ? 'breached' : 'active';
  const breached = status === 'breached' && (state.status !== 'breached' || newPeriod);
  return { status, percentageUsed: used, thresholds, crossed, breached, newPeriod };
}
