import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { costs } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { ServiceImpl } from '@costgov/rpc';
import type { ScanDataQueries } from './scan-data';

/** The scanner's data: thin mapping of GetScanData onto the queries (the team from the call). */
export function scanDataRpc(queries: ScanDataQueries): ServiceImpl<typeof costs.ScanDataService> {
  return {
    async getScanData(request, ctx) {
      if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
      const data = await queries.getScanData(ctx.teamId, {
        connectionIds: request.connectionIds,
        until: request.until ? timestampDate(request.until) : undefined,
        days: request.days,
        maxResources: request.maxResources,
      });
      return {
        windowStart: timestampFromDate(data.windowStart),
        windowEnd: timestampFromDate(data.windowEnd),
        currency: data.currency,
        truncated: data.truncated,
        resources: data.resources.map((resource) => ({
          ...resource,
          listCost: resource.listCost ?? undefined,
          contractedCost: resource.contractedCost ?? undefined,
          firstSeen: timestampFromDate(resource.firstSeen),
          lastSeen: timestampFromDate(resource.lastSeen),
        })),
        totals: data.totals,
        daily: data.daily,
        tagUsage: data.tagUsage,
      };
    },
  };
}
