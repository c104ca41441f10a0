import type { events } from '@costgov/contracts';

const money = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const percent = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/** The day before a YYYY-MM-DD date: the events give the period's end as the day after its last. */
function dayBefore(date: string): string {
  const at = new Date(`${date}T00:00:00Z`);
  at.setUTCDate(at.getUTCDate() - 1);
  return at.toISOString().slice(0, 10);
}

function periodText(crossing: events.BudgetThresholdCrossed): string {
  const period = crossing.period ? `${crossing.period} period` : 'period';
  return /^\d{4}-\d{2}-\d{2}$/.test(crossing.periodEnd)
    ? `the ${period} ${crossing.periodStart} to ${dayBefore(crossing.periodEnd)}`
    : `the ${period} starting ${crossing.periodStart}`;
}

/**
 * What a person reads to act on a breach: which budget of which project, how much was spent against
 * what, which threshold, which period, and what to do.
 */
export function breachMessage(crossing: events.BudgetThresholdCrossed, thresholdValue: number): string {
  const currency = crossing.currency;
  return (
    `Budget '${crossing.budgetName}' of project '${crossing.projectName}' crossed its ` +
    `${percent.format(crossing.threshold)} % threshold (${money.format(thresholdValue)} ${currency}) in ` +
    `${periodText(crossing)}: ${money.format(crossing.currentSpend)} ${currency} spent of ` +
    `${money.format(crossing.amount)} ${currency} (${percent.format(crossing.percentageUsed)} %). ` +
    `Review the project's spend, or raise the budget if the spend is expected.`
  );
}
