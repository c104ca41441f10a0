import { readFileSync } from 'node:fs';
import path from 'node:path';

const bundlePath = path.join(__dirname, 'gen/openapi.json');

/**
 * The OpenAPI document, the source of truth for the public interface: written in `spec/` and bundled by
 * Redocly into `gen/openapi.json` (`npm run generate`, committed), which is read once and served as is.
 * It lists exactly the operations the gateway routes (test/openapi-routes.test.ts compares both ways), so
 * an endpoint joins the document in the change that routes it.
 */
export function loadOpenApiDocument(): Record<string, unknown> {
  return JSON.parse(readFileSync(bundlePath, 'utf8')) as Record<string, unknown>;
}
