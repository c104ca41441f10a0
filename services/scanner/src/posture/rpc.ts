import type { scanner } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { Posture } from './posture';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

export function postureRpc(posture: Posture): ServiceImpl<typeof scanner.PostureService> {
  return {
    async getCostPosture(request, ctx) {
      return posture.getCostPosture(teamOf(ctx), { projectId: request.projectId, date: request.date });
    },
  };
}
