import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { violations } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Violation } from './violation';
import type { Violations } from './violations';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

const timestamp = (at: Date | null) => (at ? timestampFromDate(at) : undefined);

const violationMessage = (v: Violation) => ({
  id: v.id,
  projectId: v.projectId,
  budgetId: v.budgetId,
  type: v.type,
  severity: v.severity,
  status: v.status,
  message: v.message,
  currentValue: v.currentValue,
  thresholdValue: v.thresholdValue,
  thresholdPercentage: v.thresholdPercentage,
  currency: v.currency,
  periodStart: v.periodStart,
  createdAt: timestampFromDate(v.createdAt),
  updatedAt: timestampFromDate(v.updatedAt),
  acknowledgedBy: v.acknowledgedBy ?? undefined,
  acknowledgedAt: timestamp(v.acknowledgedAt),
  acknowledgeNote: v.acknowledgeNote ?? undefined,
  resolvedBy: v.resolvedBy ?? undefined,
  resolvedAt: timestamp(v.resolvedAt),
  resolveNote: v.resolveNote ?? undefined,
});

/** The actor named in the request, else the one in the call's metadata. */
const actorOf = (request: { actor: string }, ctx: CallContext) => request.actor || ctx.actor || '';

export function violationsRpc(
  lifecycle: Violations,
  once: IdempotentCalls,
): ServiceImpl<typeof violations.ViolationsService> {
  return {
    async getViolation(request, ctx) {
      return violationMessage(await lifecycle.getViolation(teamOf(ctx), request.id));
    },
    async listViolations(request, ctx) {
      const { violations: page, meta } = await lifecycle.listViolations(teamOf(ctx), {
        projectId: request.projectId,
        budgetId: request.budgetId,
        severity: request.severity,
        status: request.status,
        sort: request.sort,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { violations: page.map(violationMessage), meta };
    },
    acknowledgeViolation: (request, ctx) =>
      once(ctx, 'AcknowledgeViolation', violations.ViolationSchema, violationMessage, (effect) =>
        lifecycle.acknowledgeViolation(
          teamOf(ctx),
          request.id,
          { note: request.note, actor: actorOf(request, ctx) },
          effect,
        ),
      ),
    resolveViolation: (request, ctx) =>
      once(ctx, 'ResolveViolation', violations.ViolationSchema, violationMessage, (effect) =>
        lifecycle.resolveViolation(
          teamOf(ctx),
          request.id,
          { note: request.note, actor: actorOf(request, ctx) },
          effect,
        ),
      ),
  };
}
