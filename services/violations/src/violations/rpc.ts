import { violations } from '@costgov/contracts';
import { messageWriter, teamScoped, type CallContext, type ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Violations } from './violations';

const violationMessage = messageWriter(violations.ViolationSchema);

/** The actor named in the request, else the one in the call's metadata. */
const actorOf = (request: { actor: string }, ctx: CallContext) => request.actor || ctx.actor || '';

export function violationsRpc(
  lifecycle: Violations,
  once: IdempotentCalls,
): ServiceImpl<typeof violations.ViolationsService> {
  return {
    getViolation: teamScoped(async (request, { teamId }) =>
      violationMessage(await lifecycle.getViolation(teamId, request.id)),
    ),
    listViolations: teamScoped(async (request, { teamId }) => {
      const { violations: page, meta } = await lifecycle.listViolations(teamId, {
        projectId: request.projectId,
        budgetId: request.budgetId,
        severity: request.severity,
        status: request.status,
        sort: request.sort,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { violations: page.map(violationMessage), meta };
    }),
    acknowledgeViolation: teamScoped((request, ctx) =>
      once(ctx, 'AcknowledgeViolation', violations.ViolationSchema, violationMessage, (effect) =>
        lifecycle.acknowledgeViolation(
          ctx.teamId,
          request.id,
          { note: request.note, actor: actorOf(request, ctx) },
          effect,
        ),
      ),
    ),
    resolveViolation: teamScoped((request, ctx) =>
      once(ctx, 'ResolveViolation', violations.ViolationSchema, violationMessage, (effect) =>
        lifecycle.resolveViolation(
          ctx.teamId,
          request.id,
          { note: request.note, actor: actorOf(request, ctx) },
          effect,
        ),
      ),
    ),
  };
}
