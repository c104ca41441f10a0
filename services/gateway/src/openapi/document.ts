import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/** The hand-written OpenAPI document: the source of truth for the public interface, read once. */
export function loadOpenApiDocument(): Record<string, unknown> {
  return parse(readFileSync(path.join(__dirname, 'openapi.yaml'), 'utf8')) as Record<string, unknown>;
}
