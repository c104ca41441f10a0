import type { MessageInitShape } from '@bufbuild/protobuf';
import { scanner } from '@costgov/contracts';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import { createScanOperation, type Scans } from './scans';

export type FindingMessage = MessageInitShape<typeof scanner.FindingSchema>;

/** The findings a scan's read carries (the findings of the scan); none until findings are stored. */
export type FindingsOfScan = (teamId: string, scanId: string) => Promise<FindingMessage[]>;

/** A scan's findings are on its single read only. */
const scanMessage = messageWriter(scanner.ScanSchema, { absent: ['findings'] });

export function scansRpc(
  scans: Scans,
  once: IdempotentCalls,
  findingsOf: FindingsOfScan = async () => [],
): ServiceImpl<typeof scanner.ScansService> {
  return {
    createScan: teamScoped((request, ctx) =>
      once(ctx, createScanOperation, scanner.ScanSchema, scanMessage, (effect) =>
        scans.createScan(ctx.teamId, request.projectId, effect),
      ),
    ),
    getScan: teamScoped(async (request, { teamId }) => {
      const scan = await scans.getScan(teamId, request.id);
      return { ...scanMessage(scan), findings: await findingsOf(teamId, scan.id) };
    }),
    listScans: teamScoped(async (request, { teamId }) => {
      const { scans: list, meta } = await scans.listScans(teamId, {
        projectId: request.projectId,
        status: request.status,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { scans: list.map(scanMessage), meta };
    }),
  };
}
