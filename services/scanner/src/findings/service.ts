import { scanner } from '@costgov/contracts';
import type { ServiceContext } from '@costgov/runtime';
import type { Rule } from '../rules/types';
import { findingsFactory } from './findings';
import { purgeProjectFindings, findingsPurgeConsumer } from './purge';
import { findingsRpc } from './rpc';

/** Serves FindingsService and purges a deleted project's findings. */
export async function startFindings(
  { db, rpc, outbox, now, logger, consume }: ServiceContext,
  rules: () => readonly Rule[],
): Promise<void> {
  rpc.add(scanner.FindingsService, findingsRpc(findingsFactory({ db, outbox, now }), rules));
  await consume({
    durable: findingsPurgeConsumer,
    types: ['budgets.project.deleted'],
    handler: (tx, event) => purgeProjectFindings(tx, event, logger),
  });
}
