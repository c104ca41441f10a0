import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { scanner } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Scan } from './scan';
import { createScanOperation, type Scans } from './scans';

export type FindingMessage = MessageInitShape<typeof scanner.FindingSchema>;

/** The findings a scan's read carries (the findings of the scan); none until findings are stored. */
export type FindingsOfScan = (teamId: string, scanId: string) => Promise<FindingMessage[]>;

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

const at = (date: Date | null) => (date ? timestampFromDate(date) : undefined);

const scanMessage = (scan: Scan) => ({
  id: scan.id,
  projectId: scan.projectId,
  status: scan.status,
  resourcesScanned: scan.resourcesScanned,
  findingsCount: scan.findingsCount,
  creditsUsed: scan.creditsUsed,
  error: scan.error ?? undefined,
  startedAt: at(scan.startedAt),
  completedAt: at(scan.completedAt),
  createdAt: at(scan.createdAt),
});

export function scansRpc(
  scans: Scans,
  once: IdempotentCalls,
  findingsOf: FindingsOfScan = async () => [],
): ServiceImpl<typeof scanner.ScansService> {
  return {
    createScan: (request, ctx) =>
      once(ctx, createScanOperation, scanner.ScanSchema, scanMessage, (effect) =>
        scans.createScan(teamOf(ctx), request.projectId, effect),
      ),
    async getScan(request, ctx) {
      const teamId = teamOf(ctx);
      const scan = await scans.getScan(teamId, request.id);
      return { ...scanMessage(scan), findings: await findingsOf(teamId, scan.id) };
    },
    async listScans(request, ctx) {
      const { scans: list, meta } = await scans.listScans(teamOf(ctx), {
        projectId: request.projectId,
        status: request.status,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { scans: list.map(scanMessage), meta };
    },
  };
}
