import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import prettier from 'prettier';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../../..');
const documentPath = path.join(root, 'services/gateway/src/openapi/gen/openapi.json');
const schemaPath = path.join(root, 'libs/client/src/gen/schema.ts');

describe('libs/client/src/gen/schema.ts', () => {
  it('is what `npm run generate` makes of the OpenAPI document now', async () => {
    // The options and formatting of the generate script in package.json (CI's generate:check diffs the
    // same thing); this test says so before a commit.
    const generated =
      COMMENT_HEADER +
      astToString(await openapiTS(pathToFileURL(documentPath), { defaultNonNullable: false, silent: true }));
    const formatted = await prettier.format(generated, {
      ...(await prettier.resolveConfig(schemaPath)),
      filepath: schemaPath,
    });
    expect(
      readFileSync(schemaPath, 'utf8') === formatted,
      'run `npm run generate` and commit schema.ts',
    ).toBe(true);
  }, 60_000);
});
