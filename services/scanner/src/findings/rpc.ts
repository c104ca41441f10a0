import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { scanner } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { Rule } from '../rules/types';
import type { Finding } from './finding';
import type { Findings } from './findings';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

/** The proto Finding; GetScan uses it for the scan's findings too. */
export const findingMessage = (f: Finding) => ({
  id: f.id,
  scanId: f.scanId,
  projectId: f.projectId,
  ruleId: f.ruleId,
  resourceId: f.resourceId,
  resourceType: f.resourceType,
  severity: f.severity,
  status: f.status,
  title: f.title,
  description: f.description,
  recommendation: f.recommendation,
  estimatedMonthlySavings: f.estimatedMonthlySavings ?? undefined,
  currency: f.currency,
  suppressionReason: f.suppressionReason ?? undefined,
  createdAt: timestampFromDate(f.createdAt),
  updatedAt: timestampFromDate(f.updatedAt),
  resolvedAt: f.resolvedAt ? timestampFromDate(f.resolvedAt) : undefined,
});

/** The actor named in the request, else the one in the call's metadata. */
const actorOf = (request: { actor: string }, ctx: CallContext) => request.actor || ctx.actor || '';

export function findingsRpc(
  findings: Findings,
  rules: () => readonly Rule[],
): ServiceImpl<typeof scanner.FindingsService> {
  return {
    async listFindings(request, ctx) {
      const { findings: page, meta } = await findings.listFindings(teamOf(ctx), {
        scanId: request.scanId,
        projectId: request.projectId,
        severity: request.severity,
        status: request.status,
        ruleId: request.ruleId,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { findings: page.map(findingMessage), meta };
    },
    async updateFinding(request, ctx) {
      return findingMessage(
        await findings.updateFinding(teamOf(ctx), request.id, {
          status: request.status,
          reason: request.reason,
          actor: actorOf(request, ctx),
        }),
      );
    },
    listRules() {
      // The catalogue's descriptive fields; `evaluate` stays in the service.
      return Promise.resolve({
        rules: rules().map(({ id, severity, title, description, recommendation, category }) => ({
          id,
          severity,
          title,
          description,
          recommendation,
          category,
        })),
      });
    },
  };
}
