import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * The hand-written OpenAPI document: the source of truth for the public interface, read once and served
 * as is. It lists exactly the operations the gateway routes (test/openapi-routes.test.ts compares both
 * ways), so an endpoint joins the document in the change that routes it.
 */
export function loadOpenApiDocument(): Record<string, unknown> {
  return parse(readFileSync(path.join(__dirname, 'spec/openapi.yaml'), 'utf8')) as Record<string, unknown>;
}
