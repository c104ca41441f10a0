import { violations } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/** /v1/guard/violations: requests and answers are the messages' fields under their REST names. */
export const violationOperations = (client: RpcClient<typeof violations.ViolationsService>) =>
  operationTable(
    violations.ViolationsService,
    client,
    {
      listViolations: { rpc: 'listViolations' },
      getViolation: { rpc: 'getViolation' },
      acknowledgeViolation: { rpc: 'acknowledgeViolation', acting: true },
      resolveViolation: { rpc: 'resolveViolation', acting: true },
    },
    {
      [violations.ViolationSchema.typeName]: {
        acknowledge_note: 'acknowledgement_note',
        resolve_note: 'resolution_note',
      },
    },
  );
