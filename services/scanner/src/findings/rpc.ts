import { scanner } from '@costgov/contracts';
import { messageWriter, teamScoped, type CallContext, type ServiceImpl } from '@costgov/rpc';
import type { Rule } from '../rules/types';
import type { Findings } from './findings';

/** The proto Finding; GetScan uses it for the scan's findings too. */
export const findingMessage = messageWriter(scanner.FindingSchema);

const ruleMessage = messageWriter(scanner.RuleSchema);

/** The actor named in the request, else the one in the call's metadata. */
const actorOf = (request: { actor: string }, ctx: CallContext) => request.actor || ctx.actor || '';

export function findingsRpc(
  findings: Findings,
  rules: () => readonly Rule[],
): ServiceImpl<typeof scanner.FindingsService> {
  return {
    listFindings: teamScoped(async (request, { teamId }) => {
      const { findings: page, meta } = await findings.listFindings(teamId, {
        scanId: request.scanId,
        projectId: request.projectId,
        severity: request.severity,
        status: request.status,
        ruleId: request.ruleId,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { findings: page.map(findingMessage), meta };
    }),
    updateFinding: teamScoped(async (request, ctx) =>
      findingMessage(
        await findings.updateFinding(ctx.teamId, request.id, {
          status: request.status,
          reason: request.reason,
          actor: actorOf(request, ctx),
        }),
      ),
    ),
    // The catalogue's descriptive fields; `evaluate` stays in the service.
    listRules: async () => ({ rules: rules().map(ruleMessage) }),
  };
}
