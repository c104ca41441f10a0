import { costs } from '@costgov/contracts';
import { BadRequestError, ValidationError } from '@costgov/errors';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { Logger } from '@costgov/log';
import type { SpendQueries } from '../spend/spend';
import { outsideBudgetPeriods, type BudgetPeriodSource } from './budget-periods';
import type { CostData } from './ingest';

type UploadRequest = costs.UploadCostDataRequest;

const summaryMessage = messageWriter(costs.IngestSummarySchema);
const spendMessage = messageWriter(costs.GetSpendResponseSchema);

/** The file's bytes: every message after the first, each a `chunk`. */
async function* chunksOf(rest: AsyncIterator<UploadRequest>): AsyncGenerator<Uint8Array> {
  for (let next = await rest.next(); !next.done; next = await rest.next()) {
    const part = next.value.part;
    if (part.case !== 'chunk')
      throw new BadRequestError('Only the first message of an upload may be `start`.');
    yield part.value;
  }
}

/**
 * Cost data: the upload is here; the spend queries are the rollup readers of ../spend. With
 * `budgetPeriods`, an upload's answer also warns when budgets will count none of its billing periods.
 */
export function costDataRpc(
  costData: CostData,
  spend: SpendQueries,
  budgetPeriods?: { source: BudgetPeriodSource; logger: Pick<Logger, 'warn'> },
): ServiceImpl<typeof costs.CostDataService> {
  return {
    uploadCostData: teamScoped(async (requests: AsyncIterable<UploadRequest>, { teamId }) => {
      const stream = requests[Symbol.asyncIterator]();
      const first = await stream.next();
      if (first.done || first.value.part.case !== 'start') {
        throw new ValidationError([{ field: 'start', message: 'must be the first message of an upload' }]);
      }
      const start = first.value.part.value;
      const summary = await costData.upload(teamId, {
        connectionId: start.connectionId,
        contentEncoding: start.contentEncoding,
        body: chunksOf(stream),
      });
      if (budgetPeriods) {
        const { source, logger } = budgetPeriods;
        summary.warnings.push(
          ...(await outsideBudgetPeriods(
            source,
            logger,
            teamId,
            start.connectionId,
            summary.billingPeriodRanges,
          )),
        );
      }
      return summaryMessage(summary);
    }),
    getSpend: teamScoped(async (request, { teamId }) => spendMessage(await spend.getSpend(teamId, request))),
    getDailySpend: teamScoped((request, { teamId }) => spend.getDailySpend(teamId, request)),
    getTagCoverage: teamScoped((request, { teamId }) => spend.getTagCoverage(teamId, request)),
  };
}
