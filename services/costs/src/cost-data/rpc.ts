import type { costs } from '@costgov/contracts';
import { BadRequestError, ValidationError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { SpendQueries } from '../spend/spend';
import type { CostData } from './ingest';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

type UploadRequest = costs.UploadCostDataRequest;

/** The file's bytes: every message after the first, each a `chunk`. */
async function* chunksOf(rest: AsyncIterator<UploadRequest>): AsyncGenerator<Uint8Array> {
  for (let next = await rest.next(); !next.done; next = await rest.next()) {
    const part = next.value.part;
    if (part.case !== 'chunk')
      throw new BadRequestError('Only the first message of an upload may be `start`.');
    yield part.value;
  }
}

/** Cost data: the upload is here; the spend queries are the rollup readers of ../spend. */
export function costDataRpc(
  costData: CostData,
  spend: SpendQueries,
): ServiceImpl<typeof costs.CostDataService> {
  return {
    async uploadCostData(requests, ctx) {
      const teamId = teamOf(ctx);
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
      return {
        ...summary,
        rows: BigInt(summary.rows),
        rowsReplaced: BigInt(summary.rowsReplaced),
        bytes: BigInt(summary.bytes),
        durationMs: BigInt(summary.durationMs),
      };
    },
    async getSpend(request, ctx) {
      return spend.getSpend(teamOf(ctx), request);
    },
    async getDailySpend(request, ctx) {
      return spend.getDailySpend(teamOf(ctx), request);
    },
    async getTagCoverage(request, ctx) {
      return spend.getTagCoverage(teamOf(ctx), request);
    },
  };
}
