import { costs } from '@costgov/contracts';
import { teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { RawRetention, Retention } from './retention';

/** As the proto writes it: retention kept forever is absent, not null. */
const retentionMessage = ({ teamId, rawRetentionMonths }: RawRetention) => ({
  teamId,
  ...(rawRetentionMonths === null ? {} : { rawRetentionMonths }),
});

/** Operator-only: reachable over gRPC inside the cluster (the CLI), never routed by the gateway. */
export function retentionRpc(retention: Retention): ServiceImpl<typeof costs.RetentionService> {
  return {
    getRawRetention: teamScoped(async (_request, { teamId }) =>
      retentionMessage(await retention.getRawRetention(teamId)),
    ),
    setRawRetention: teamScoped(async (request, { teamId }) =>
      retentionMessage(await retention.setRawRetention(teamId, request.rawRetentionMonths)),
    ),
  };
}
