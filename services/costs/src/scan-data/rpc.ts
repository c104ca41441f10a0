import { timestampDate } from '@bufbuild/protobuf/wkt';
import { costs } from '@costgov/contracts';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { ScanDataQueries } from './scan-data';

const scanDataMessage = messageWriter(costs.GetScanDataResponseSchema);

/** The scanner's data, page by page: GetScanData onto the queries (the team from the call). */
export function scanDataRpc(queries: ScanDataQueries): ServiceImpl<typeof costs.ScanDataService> {
  return {
    getScanData: teamScoped(async (request, { teamId }) =>
      scanDataMessage(
        await queries.getScanData(teamId, {
          connectionIds: request.connectionIds,
          until: request.until ? timestampDate(request.until) : undefined,
          days: request.days,
          maxResources: request.maxResources,
          after:
            request.afterConnectionId || request.afterResourceId
              ? { connectionId: request.afterConnectionId, resourceId: request.afterResourceId }
              : undefined,
          range: { from: request.resourceIdFrom, to: request.resourceIdTo },
          splitInto: request.splitInto,
          parts: request.parts,
        }),
      ),
    ),
  };
}
