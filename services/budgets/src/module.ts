import path from 'node:path';
import { budgets } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { projectsFactory } from './projects/projects';
import { projectsRpc } from './projects/rpc';

export function budgetsModule(): ServiceModule {
  return {
    name: 'budgets',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start({ db, rpc, outbox, newId, now }) {
      const projects = projectsFactory({ db, outbox, newId, now });
      rpc.add(budgets.ProjectsService, projectsRpc(projects));
    },
  };
}
