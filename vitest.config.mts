import { defineConfig } from 'vitest/config';

const include = [
  'libs/*/src/**/*.test.ts',
  'libs/*/test/**/*.test.ts',
  'services/*/src/**/*.test.ts',
  'services/*/test/**/*.test.ts',
];

/**
 * Files that install or read process-wide state (OpenTelemetry's global tracer and meter providers, the
 * HTTP instrumentation, the metrics registry): each runs in a module graph of its own. Every other file
 * shares its worker's modules with the files before it, which spares loading gRPC, PGlite and the
 * contracts again per file (about a third of `npm test`'s time).
 */
const isolated = [
  'libs/telemetry/**/*.test.ts',
  'libs/bus/test/bus.test.ts',
  'libs/bus/test/inbox.test.ts',
  'libs/bus/test/outbox.test.ts',
  // They count fallbacks in the metrics registry that fallback.test.ts reads from zero.
  'libs/ratelimit/test/redis-cluster.processes.test.ts',
  'libs/idempotency/test/redis-cluster.processes.test.ts',
  'libs/log/src/index.test.ts',
  'libs/events/test/subscriber.test.ts',
  'libs/rpc/test/unary-channel.test.ts',
  'services/embedded/test/metrics*.test.ts',
  'services/embedded/test/trace-*.test.ts',
  'services/gateway/test/access-log.test.ts',
  'services/notifier/test/trace.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // A whole system (five services, a PGlite each) starts in a hook: slow on a loaded 2-core CI machine.
    hookTimeout: 180_000,
    // One image of an empty PGlite cluster that every in-memory test database starts from.
    globalSetup: ['libs/testing/src/pglite-template.ts'],
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'shared', include, exclude: isolated, isolate: false } },
      { extends: true, test: { name: 'isolated', include: isolated, isolate: true } },
    ],
  },
});
