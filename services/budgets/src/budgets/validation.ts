import { charLength, textProblem, Violations } from '@costgov/errors';
import { checkName } from '../projects/validation';
import { budgetPeriods, type BudgetPeriod } from './period';

export { checkName };

export const budgetStatuses = ['active', 'breached', 'archived'] as const;
export type BudgetStatus = (typeof budgetStatuses)[number];
/** What a PATCH may set; `breached` is decided by evaluation. */
export const settableStatuses = ['active', 'archived'] as const;

export const budgetSortFields = ['amount', 'name', 'created_at', 'current_spend', 'percentage_used'] as const;
export type BudgetSortField = (typeof budgetSortFields)[number];

export const defaultPeriod: BudgetPeriod = 'monthly';
export const defaultThresholds = [50, 80, 100];
export const minThresholds = 1;
export const maxThresholds = 10;
export const maxThresholdPercentage = 1000;
export const maxTags = 50;
export const maxTagKeyLength = 128;
export const maxTagValueLength = 256;

// Every code Node's ICU knows, historic ones included: a budget may follow an export in any of them.
const currencies = new Set(Intl.supportedValuesOf('currency'));

export function checkAmount(violations: Violations, amount: number): number {
  violations.check(Number.isFinite(amount) && amount > 0, 'amount', 'must be a number greater than 0');
  return amount;
}

export function checkCurrency(violations: Violations, currency: string): string {
  violations.check(
    currencies.has(currency),
    'currency',
    `'${currency}' is not an ISO 4217 currency code (three upper-case letters, like USD or EUR)`,
  );
  return currency;
}

export function checkPeriod(violations: Violations, period: string): BudgetPeriod {
  violations.check(
    (budgetPeriods as readonly string[]).includes(period),
    'period',
    `must be one of ${budgetPeriods.join(', ')}`,
  );
  return period as BudgetPeriod;
}

/** 1..10 distinct percentages in (0, 1000], returned sorted ascending. */
export function checkThresholds(violations: Violations, thresholds: number[]): number[] {
  violations.check(
    thresholds.length >= minThresholds && thresholds.length <= maxThresholds,
    'thresholds',
    `must have ${minThresholds} to ${maxThresholds} percentages`,
  );
  thresholds.forEach((percentage, index) =>
    violations.check(
      Number.isFinite(percentage) && percentage > 0 && percentage <= maxThresholdPercentage,
      `thresholds[${index}]`,
      `must be a percentage greater than 0 and at most ${maxThresholdPercentage}`,
    ),
  );
  violations.check(
    new Set(thresholds).size === thresholds.length,
    'thresholds',
    'must not repeat a percentage',
  );
  return [...thresholds].sort((a, b) => a - b);
}

/** Tag filter of the spend counted: up to 50 tags, keys of 1..128 characters, values of up to 256. */
export function checkTags(violations: Violations, tags: Record<string, string>): Record<string, string> {
  const entries = Object.entries(tags);
  violations.check(entries.length <= maxTags, 'tags', `must have at most ${maxTags} tags`);
  for (const [key, value] of entries) {
    const field = `tags.${key}`;
    const keyProblem = textProblem(key);
    if (keyProblem) violations.add('tags', `a tag key ${keyProblem}`);
    else
      violations.check(
        key.trim().length >= 1 && charLength(key) <= maxTagKeyLength,
        'tags',
        `tag keys must have 1 to ${maxTagKeyLength} characters, not all blank ('${key.slice(0, 40)}')`,
      );
    if (typeof value !== 'string') {
      violations.add(field, 'must be a string');
      continue;
    }
    const valueProblem = textProblem(value);
    if (valueProblem) violations.add(field, valueProblem);
    else
      violations.check(
        charLength(value) <= maxTagValueLength,
        field,
        `must have at most ${maxTagValueLength} characters`,
      );
  }
  return Object.fromEntries(entries);
}

export function checkSettableStatus(violations: Violations, status: string): 'active' | 'archived' {
  violations.check(
    (settableStatuses as readonly string[]).includes(status),
    'status',
    `must be one of ${settableStatuses.join(', ')} (breached is set by evaluation)`,
  );
  return status as 'active' | 'archived';
}
