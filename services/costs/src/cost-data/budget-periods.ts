import { timestampDate } from '@bufbuild/protobuf/wkt';
import { budgets } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import type { IngestWarning } from './ingest';

export interface Range {
  start: Date;
  end: Date;
}

/** The current periods of the budgets that read a connection; budgets owns projects and periods. */
export interface BudgetPeriodSource {
  periodsOf(teamId: string, connectionId: string): Promise<Range[]>;
  close(): void;
}

/** How long an upload's answer waits for budgets before it goes without the check. */
export const budgetPeriodsDeadlineMs = 1_000;

/**
 * BudgetPeriodSource asked of budgets over gRPC (BudgetsService.ListConnectionBudgetPeriods), with a
 * short deadline. The address is read at the first call: the embedded system starts costs before
 * budgets, on a port it learns then.
 */
export function budgetPeriodsOverRpc(address: () => string): BudgetPeriodSource {
  let client: RpcClient<typeof budgets.BudgetsService> | undefined;
  return {
    async periodsOf(teamId, connectionId) {
      client ??= createRpcClient(budgets.BudgetsService, address(), { deadlineMs: budgetPeriodsDeadlineMs });
      const { periods } = await client.listConnectionBudgetPeriods({ connectionId }, { teamId });
      return periods.map((p) => ({ start: timestampDate(p.periodStart!), end: timestampDate(p.periodEnd!) }));
    },
    close: () => client?.close(),
  };
}

const day = (at: Date) => at.toISOString().slice(0, 10);
const rangeText = ({ start, end }: Range) => `${day(start)} to ${day(end)}`;

/**
 * The `outside_budget_periods` warning: none of the file's billing periods overlaps the current period
 * of a budget of a project reading the connection, so those budgets count none of it (an export of a
 * month already closed). Nothing when no budget reads the connection. When budgets does not answer in
 * time the upload goes without the check, and the log says why; the data is stored either way.
 */
export async function outsideBudgetPeriods(
  source: BudgetPeriodSource,
  logger: Pick<Logger, 'warn'>,
  teamId: string,
  connectionId: string,
  billingPeriods: Range[],
): Promise<IngestWarning[]> {
  if (billingPeriods.length === 0) return [];
  let current: Range[];
  try {
    current = await source.periodsOf(teamId, connectionId);
  } catch (error) {
    logger.warn(
      { err: error, connection_id: connectionId },
      'budget periods not checked for the upload: budgets did not answer',
    );
    return [];
  }
  if (current.length === 0) return [];
  const overlaps = billingPeriods.some((file) =>
    current.some((budget) => file.start < budget.end && budget.start < file.end),
  );
  if (overlaps) return [];
  const budgetRanges = [...new Map(current.map((r) => [rangeText(r), r])).keys()].sort();
  const fileRanges = billingPeriods.map(rangeText);
  return [
    {
      code: 'outside_budget_periods',
      message:
        `The data lies outside the current period: none of the file's billing periods (${fileRanges.join(', ')}) ` +
        `overlaps the current period of the ${current.length === 1 ? 'budget' : `${current.length} budgets`} ` +
        `reading this connection (${budgetRanges.join(', ')}). It was stored, but budgets count their ` +
        'current period and will show 0 for it.',
      details: {
        billing_periods: fileRanges.join(', '),
        budget_periods: budgetRanges.join(', '),
        budgets: String(current.length),
      },
    },
  ];
}
