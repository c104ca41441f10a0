import { budgetsModule } from '@costgov/budgets';
import { baseConfig, loadConfigOrExit } from '@costgov/config';
import { costsModule } from '@costgov/costs';
import { migrate, openDb } from '@costgov/db';
import { identityModule } from '@costgov/identity';
import { createLogger } from '@costgov/log';
import { notifierModule } from '@costgov/notifier';
import { serviceMigrations } from '@costgov/runtime';
import { scannerModule } from '@costgov/scanner';
import { violationsModule } from '@costgov/violations';

/**
 * Applies every service's migrations to its schema and exits (0 when all are applied): run once per
 * release (the Kubernetes Job, `npm run migrate`) before the services roll, so that replicas starting
 * together find their schema ready. Services still check at start; an applied migration is skipped.
 */
async function main() {
  const config = loadConfigOrExit(baseConfig);
  const logger = createLogger('migrate', config.LOG_LEVEL);
  // Only the modules' migrations are used: nothing is started, so no address (budgets' identity) is dialled.
  const modules = [
    identityModule(),
    costsModule(),
    budgetsModule(),
    violationsModule(),
    scannerModule(),
    notifierModule(),
  ];
  for (const module of modules) {
    const db = await openDb({
      service: module.name,
      databaseUrl: config.DATABASE_URL,
      dataDir: config.DATA_DIR,
    });
    try {
      const applied = await migrate(db, serviceMigrations(module));
      logger.info(
        { schema: module.name, migrations: applied },
        applied.length ? 'applied migrations' : 'up to date',
      );
    } finally {
      await db.close();
    }
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('Migrations failed:', error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
