import path from 'node:path';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { scannerConfig, type ScannerConfig } from './config';
import { startFindings } from './findings/service';
import { startPosture, type PostureOptions } from './posture/service';
import { allRules } from './rules/catalogue';
import { startScans, type ScansOptions } from './scans/service';

/**
 * The sides the process serves; `{}` reads the services at the configured addresses with the configured
 * settings, and (tests) stand-ins or settings given here replace them.
 */
export interface ScannerOptions {
  /** Serves PostureService when given, on the API side (not when SCANNER_MODE is `worker`). */
  posture?: PostureOptions;
  /** Serves ScansService and/or runs scan workers (by SCANNER_MODE, or `mode`) when given. */
  scans?: ScansOptions;
}

/** Scanner: scans (API side and workers), findings, the rule catalogue and the cost posture. */
export function scannerModule(options: ScannerOptions = {}): ServiceModule<ScannerConfig> {
  return {
    name: 'scanner',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: scannerConfig,
    async start(ctx) {
      const stops: Array<() => Promise<void>> = [];
      // Findings are read and purged wherever the service runs.
      await startFindings(ctx, () => allRules);
      // A worker-only process has no use for the posture.
      const mode = options.scans?.mode ?? ctx.config.SCANNER_MODE;
      if (options.posture && mode !== 'worker') stops.push(startPosture(ctx, options.posture));
      if (options.scans) stops.push(await startScans(ctx, options.scans));
      return async () => {
        for (const stop of stops.reverse()) await stop();
      };
    },
  };
}
