import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'libs/*/src/**/*.test.ts',
      'libs/*/test/**/*.test.ts',
      'services/*/src/**/*.test.ts',
      'services/*/test/**/*.test.ts',
    ],
    testTimeout: 30_000,
    // A whole system (five services, a PGlite each) starts in a hook: slow on a loaded 2-core CI machine.
    hookTimeout: 180_000,
    // One image of an empty PGlite cluster that every in-memory test database starts from.
    globalSetup: ['libs/testing/src/pglite-template.ts'],
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
