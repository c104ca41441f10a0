import path from 'node:path';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { startFindings } from './findings/service';
import { startPosture, type PostureOptions } from './posture/service';
import { allRules } from './rules/catalogue';
import { startScans, type ScansOptions } from './scans/service';

export interface ScannerOptions {
  /** Serves PostureService when given (the API side). */
  posture?: PostureOptions;
  /** Serves ScansService and/or runs scan workers (by `mode`) when given. */
  scans?: ScansOptions;
}

/** Scanner: scans (API side and workers), findings, the rule catalogue and the cost posture. */
export function scannerModule(options: ScannerOptions = {}): ServiceModule {
  return {
    name: 'scanner',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start(ctx) {
      // The gRPC services, the work-queue consumer and the sweeper are added here as they are built.
      const stops: Array<() => Promise<void>> = [];
      // Findings are read and purged wherever the service runs.
      await startFindings(ctx, () => allRules);
      if (options.posture) stops.push(startPosture(ctx, options.posture));
      if (options.scans) stops.push(await startScans(ctx, options.scans));
      return async () => {
        for (const stop of stops.reverse()) await stop();
      };
    },
  };
}
