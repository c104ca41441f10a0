import type { scanner } from '@costgov/contracts';
import { teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { Posture } from './posture';

export function postureRpc(posture: Posture): ServiceImpl<typeof scanner.PostureService> {
  return {
    getCostPosture: teamScoped((request, { teamId }) =>
      posture.getCostPosture(teamId, { projectId: request.projectId, date: request.date }),
    ),
  };
}
