import type { scanner } from '@costgov/contracts';
import { teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { Posture } from './posture';

/** A part left out (null) is an unset optional field, a missing grade the empty string: REST writes both as null. */
const orUnset = (points: number | null) => points ?? undefined;

export function postureRpc(posture: Posture): ServiceImpl<typeof scanner.PostureService> {
  return {
    getCostPosture: teamScoped(async (request, { teamId }) => {
      const answer = await posture.getCostPosture(teamId, {
        projectId: request.projectId,
        date: request.date,
      });
      return {
        ...answer,
        grade: answer.grade ?? '',
        breakdown: {
          budgetCompliance: orUnset(answer.breakdown.budgetCompliance),
          tagCoverage: orUnset(answer.breakdown.tagCoverage),
          recommendationAdoption: orUnset(answer.breakdown.recommendationAdoption),
        },
      };
    }),
  };
}
