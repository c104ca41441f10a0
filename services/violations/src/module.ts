import path from 'node:path';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { purgeDeletedProject } from './purge/purge';

/** Violations: for now the purge of deleted projects; the violation lifecycle comes with its own issue. */
export function violationsModule(): ServiceModule {
  return {
    name: 'violations',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start({ consume, logger }) {
      await consume({
        durable: 'violations_project_deleted',
        types: ['budgets.project.deleted'],
        handler: (tx, event) => purgeDeletedProject(tx, event, logger),
      });
    },
  };
}
