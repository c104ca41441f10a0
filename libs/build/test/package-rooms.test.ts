import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The repository's own eslint.config.mjs, applied to sample files at the paths they would have.
const root = path.resolve(__dirname, '../../..');
const eslint = new ESLint({ cwd: root });

/** What no-restricted-imports says about `source` written in the file at `file` (from the root). */
async function refusals(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: path.join(root, file) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe("a package's src/ and test/ are its own", () => {
  it.each([
    ['libs/bench/src/scim.ts', "import { parseFilter } from '@costgov/identity/src/scim/filter';"],
    [
      'libs/bench/src/costs.ts',
      "import type { GenerateOptions } from '@costgov/costs/src/cost-data/generate';",
    ],
    ['libs/bench/src/index.ts', "export * from '@costgov/costs/src';"],
    [
      'services/cli/test/check.test.ts',
      "import { startRestSystem } from '@costgov/embedded/test/support/rest';",
    ],
    [
      'services/embedded/test/rest-findings.test.ts',
      "export { recordFindings } from '@costgov/scanner/src/findings/record';",
    ],
  ])('refuses, in %s, the import by name %s', async (file, source) => {
    const messages = await refusals(file, source);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('export what is needed from its src/index.ts');
  });

  it.each([
    ['services/cli/test/check.test.ts', "import { focusFile } from '../../all/test/support/focus';"],
    [
      'libs/idempotency/src/redis.test.ts',
      "import { captureLogger } from '../../ratelimit/src/test-support';",
    ],
    ['services/scanner/test/rules/x.test.ts', "import { budgetsModule } from '../../../budgets/src/module';"],
    ['libs/bench/src/x.ts', "import * as rpc from '../../rpc';"],
    ['libs/bench/main.ts', "import { sample } from '../../services/scanner/test/rules/sample-expectations';"],
  ])('refuses, in %s, the relative path out of its package %s', async (file, source) => {
    const messages = await refusals(file, source);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('relative path leaves its package');
  });

  it.each([
    ['libs/bench/src/scim.ts', "import { parseFilter } from '@costgov/identity';"],
    ['services/gateway/src/app.ts', "import asyncApiDocument from '@costgov/events/asyncapi.json';"],
    ['services/scanner/test/rules/catalogue.test.ts', "import { rules } from '../../src/rules/catalogue';"],
    ['services/cli/src/commands/check.ts', "import { version } from '../../package.json';"],
    ['libs/idempotency/src/fallback.ts', "import { idempotencyMetrics } from './metrics';"],
  ])('allows, in %s, %s', async (file, source) => {
    expect(await refusals(file, source)).toEqual([]);
  });
});
