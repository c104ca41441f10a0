import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOpenApiDocument } from './document';

const root = path.resolve(__dirname, '../../../..');

describe('gen/openapi.json', () => {
  it('is what `npm run generate` bundles of spec/ now', () => {
    // The command of the generate script in package.json (CI's generate:check diffs its output); this test
    // says so before a commit, since the gateway serves the bundle, not spec/.
    const dir = mkdtempSync(path.join(tmpdir(), 'openapi-bundle-'));
    try {
      const output = path.join(dir, 'openapi.json');
      execFileSync(
        process.execPath,
        [
          require.resolve('@redocly/cli/bin/cli.js'),
          'bundle',
          'services/gateway/src/openapi/spec/openapi.yaml',
          '-o',
          output,
          '--component-renaming-conflicts-severity',
          'error',
        ],
        { cwd: root, stdio: 'pipe' },
      );
      const bundled: unknown = JSON.parse(readFileSync(output, 'utf8'));
      // Compared as text of the parsed documents, so key order counts: answers follow the document's.
      expect(
        JSON.stringify(loadOpenApiDocument()) === JSON.stringify(bundled),
        'run `npm run generate` and commit gen/openapi.json',
      ).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
