import { describe, expect, it } from 'vitest';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { PostureClients } from '../src/posture/sources';
import { postureSourcesOverRpc } from '../src/posture/sources';

/** A planted budget: its status and whether its current period holds data. */
interface Planted {
  status: 'active' | 'breached';
  withData: boolean;
}

/** A budgets client paging through planted budgets as budgets does (filtered by status). */
function budgetsOf(planted: Planted[]): PostureClients['budgets'] {
  const listBudgets = async (request: { status?: string; page?: { page: number; perPage: number } }) => {
    const matching = planted.filter((budget) => budget.status === request.status);
    const { page, perPage } = request.page ?? { page: 1, perPage: 20 };
    const slice = matching.slice((page - 1) * perPage, page * perPage);
    return {
      budgets: slice.map((budget) => ({
        dataThrough: budget.withData ? timestampFromDate(new Date('2026-11-09T00:00:00Z')) : undefined,
      })),
      meta: { totalCount: matching.length, totalPages: Math.ceil(matching.length / perPage) },
    };
  };
  return { listBudgets } as unknown as PostureClients['budgets'];
}

const sourcesWith = (planted: Planted[]) =>
  postureSourcesOverRpc({ budgets: budgetsOf(planted) } as unknown as PostureClients);

describe('posture sources: budget counts', () => {
  it('count only budgets with data in their current period, across pages', async () => {
    // 250 budgets: more than two pages of 100 per status, every third without data.
    const planted: Planted[] = Array.from({ length: 250 }, (_, i) => ({
      status: i % 5 === 0 ? 'breached' : 'active',
      withData: i % 3 !== 0,
    }));
    const expected = (status: Planted['status']) =>
      planted.filter((budget) => budget.status === status && budget.withData).length;
    expect(await sourcesWith(planted).budgetCounts('team_a', null)).toEqual({
      active: expected('active'),
      breached: expected('breached'),
    });
  });

  it('budgets whose periods hold no data count as none', async () => {
    const planted: Planted[] = [
      { status: 'active', withData: false },
      { status: 'active', withData: false },
    ];
    expect(await sourcesWith(planted).budgetCounts('team_a', 'prj_a')).toEqual({ active: 0, breached: 0 });
  });
});
