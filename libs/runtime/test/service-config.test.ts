import { describe, expect, it } from 'vitest';
import { createMemoryBus } from '@costgov/bus';
import { ConfigError, z } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { freshDb } from '@costgov/testing';
import { startService, type ServiceContext, type ServiceModule } from '../src/service';

const logger = createLogger('test', 'silent');

const ownConfig = z.object({ SWEEP_MS: z.coerce.number().int().min(10).default(500) });

/** A module with a variable of its own that keeps the configuration it was started with. */
function recordingModule() {
  const seen: Array<ServiceContext<z.infer<typeof ownConfig>>['config']> = [];
  const module: ServiceModule<z.infer<typeof ownConfig>> = {
    name: 'recording',
    migrations: [],
    config: ownConfig,
    async start({ config }) {
      seen.push(config);
    },
  };
  return { module, seen };
}

describe('startService configuration', () => {
  it('hands start the shared variables and the module’s own, parsed from `env` and frozen', async () => {
    const { module, seen } = recordingModule();
    const service = await startService(module, {
      logger,
      bus: createMemoryBus({ logger }),
      openDb: () => freshDb('recording'),
      dataDir: 'memory',
      grpcAddress: '127.0.0.1:0',
      env: { SWEEP_MS: '250', OUTBOX_POLL_MS: '20', RPC_DEADLINE_MS: '1500' },
    });
    try {
      expect(seen[0]).toMatchObject({
        SWEEP_MS: 250,
        OUTBOX_POLL_MS: 20,
        RPC_DEADLINE_MS: 1500,
        IDEMPOTENCY_TTL_MS: 24 * 60 * 60 * 1000,
        EVENT_NAMESPACE: 'costgov',
      });
      expect(Object.isFrozen(seen[0])).toBe(true);
    } finally {
      await service.stop();
    }
  });

  it.each([
    [{ SWEEP_MS: 'soon' }, 'SWEEP_MS: Invalid input: expected number'],
    [{ OUTBOX_POLL_MS: '1' }, 'OUTBOX_POLL_MS: Too small: expected number to be >=10'],
    [{ DATABASE_PREPARED_STATEMENTS: 'no' }, 'DATABASE_PREPARED_STATEMENTS: Invalid option: expected one of'],
  ])('refuses %o with its name before it opens anything', async (env, message) => {
    const { module, seen } = recordingModule();
    let opened = false;
    const started = startService(module, {
      logger,
      bus: createMemoryBus({ logger }),
      openDb: async () => {
        opened = true;
        return freshDb('recording');
      },
      dataDir: 'memory',
      grpcAddress: '127.0.0.1:0',
      env,
    });
    await expect(started).rejects.toThrow(ConfigError);
    await expect(started).rejects.toThrow(message);
    expect(opened).toBe(false);
    expect(seen).toEqual([]);
  });
});
