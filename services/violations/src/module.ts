import path from 'node:path';
import { violations } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { violationsConfig, type ViolationsConfig } from './config';
import { budgetPurge } from './purge/budget-purge';
import { purgeDeletedProject } from './purge/purge';
import { violationOpenings, openingEventTypes } from './violations/openings';
import { violationsRpc } from './violations/rpc';
import { violationsFactory } from './violations/violations';

/**
 * Violations: opened from budgets' threshold events, acknowledged and resolved over gRPC, purged with
 * their budget or project.
 */
export function violationsModule(): ServiceModule<ViolationsConfig> {
  return {
    name: 'violations',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: violationsConfig,
    async start({ consume, logger, db, rpc, outbox, newId, now, once }) {
      rpc.add(violations.ViolationsService, violationsRpc(violationsFactory({ db, outbox, now }), once));
      const open = violationOpenings({ outbox, newId, now, logger });
      const purgeBudget = budgetPurge({ outbox, logger });
      // One durable for a budget's own events keeps their order: a deletion is never overtaken by a
      // crossing reported before it.
      await consume({
        durable: 'violations_budget_events',
        types: [...openingEventTypes, 'budgets.budget.deleted'],
        handler: (tx, event) =>
          event.type === 'budgets.budget.deleted' ? purgeBudget(tx, event) : open(tx, event),
      });
      await consume({
        durable: 'violations_project_deleted',
        types: ['budgets.project.deleted'],
        handler: (tx, event) => purgeDeletedProject(tx, event, logger),
      });
    },
  };
}
