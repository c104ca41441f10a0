import { describe, expect, it, vi } from 'vitest';
import { UnavailableError } from '@costgov/errors';
import { outsideBudgetPeriods, type BudgetPeriodSource, type Range } from './budget-periods';

const range = (start: string, end: string): Range => ({
  start: new Date(`${start}T00:00:00Z`),
  end: new Date(`${end}T00:00:00Z`),
});
const october = range('2026-10-01', '2026-11-01');
const november = range('2026-11-01', '2026-12-01');
const quarter = range('2026-10-01', '2027-01-01');

const source = (periods: Range[] | Error): BudgetPeriodSource => ({
  periodsOf: async () => {
    if (periods instanceof Error) throw periods;
    return periods;
  },
  close: () => undefined,
});
const check = (periods: Range[] | Error, file: Range[], logger = { warn: vi.fn() }) =>
  outsideBudgetPeriods(source(periods), logger, 'team_x', 'con_x', file);

describe('the outside_budget_periods warning of an upload', () => {
  it('warns when no billing period of the file overlaps a current budget period, naming both', async () => {
    const warnings = await check([november, november], [october]);
    expect(warnings).toEqual([
      expect.objectContaining({
        code: 'outside_budget_periods',
        details: {
          billing_periods: '2026-10-01 to 2026-11-01',
          budget_periods: '2026-11-01 to 2026-12-01',
          budgets: '2',
        },
      }),
    ]);
  });

  it('says nothing when one period overlaps, when no budget reads the connection, or for an empty file', async () => {
    expect(await check([november], [october, november])).toEqual([]);
    // A quarterly budget counts October too.
    expect(await check([november, quarter], [october])).toEqual([]);
    expect(await check([], [october])).toEqual([]);
    expect(await check([november], [])).toEqual([]);
  });

  it('goes without the check when budgets does not answer, and logs why', async () => {
    const logger = { warn: vi.fn() };
    expect(await check(new UnavailableError('budgets is down'), [october], logger)).toEqual([]);
    expect(logger.warn).toHaveBeenCalledWith(
      expect.objectContaining({ connection_id: 'con_x' }),
      expect.stringMatching(/budgets did not answer/),
    );
  });
});
