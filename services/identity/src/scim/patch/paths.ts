import { ScimError } from '../errors';
import { parseFilter, type FilterAttribute, type FilterNode } from '../filter';
import { forbiddenNames } from './operations';
import { invalidPath, invalidValue } from './values';

// Paths: [schema URN ':'] attribute ['[' filter ']'] ['.' subAttribute], case-insensitive.

function assertSafePath(path: string, where: string): void {
  // Quoted filter values ("constructor@example.com") are data, not segments.
  const segments = path.replace(/"(?:[^"\\]|\\.)*"/g, '""').split(/[^A-Za-z0-9_$]+/);
  for (const segment of segments) {
    if (forbiddenNames.has(segment.toLowerCase())) {
      throw invalidValue(`${where}: the path '${path}' contains '${segment}', which is not allowed`);
    }
  }
}

export interface ParsedPath {
  /** Lower-case schema URN when the path starts with one of the resource's schemas. */
  schema: string | undefined;
  /** Lower-case attribute name; '' when the path is a schema URN alone. */
  attribute: string;
  /** The attribute name as sent (enterprise attributes keep the sender's spelling). */
  rawAttribute: string;
  filter: FilterNode | undefined;
  sub: string | undefined;
  rawSub: string | undefined;
}

const namePattern = /^[A-Za-z_$][A-Za-z0-9_$-]*/;
const coreSchemaPrefix = 'urn:ietf:params:scim:schemas:core:';

/**
 * Parses a path. Returns 'ignored' for a schema URN the resource does not have (other extensions:
 * accepted without error, as IdPs send them for attributes a tenant has mapped).
 */
export function parsePath(
  path: string,
  where: string,
  schemas: readonly string[],
  filterAttributes: (attribute: string) => Readonly<Record<string, FilterAttribute>> | undefined,
): ParsedPath | 'ignored' {
  assertSafePath(path, where);
  const lower = path.toLowerCase();
  let schema: string | undefined;
  let rest = path;
  if (lower.startsWith('urn:')) {
    schema = schemas.map((s) => s.toLowerCase()).find((s) => lower === s || lower.startsWith(`${s}:`));
    if (schema === undefined) {
      if (lower.startsWith(coreSchemaPrefix))
        throw invalidPath(`${where}: '${path}' is not a schema of this resource`);
      return 'ignored';
    }
    rest = path.slice(schema.length + 1);
  }
  if (rest === '') {
    return { schema, attribute: '', rawAttribute: '', filter: undefined, sub: undefined, rawSub: undefined };
  }

  const name = namePattern.exec(rest)?.[0];
  if (name === undefined) throw invalidPath(`${where}: '${path}' is not a valid attribute path`);
  let i = name.length;
  let filterText: string | undefined;
  if (rest.charAt(i) === '[') {
    const close = closingBracket(rest, i + 1);
    if (close < 0) throw invalidPath(`${where}: '${path}' has a '[' without a matching ']'`);
    filterText = rest.slice(i + 1, close);
    i = close + 1;
  }
  let rawSub: string | undefined;
  if (rest.charAt(i) === '.') {
    rawSub = namePattern.exec(rest.slice(i + 1))?.[0];
    if (rawSub === undefined) throw invalidPath(`${where}: '${path}' has no attribute name after '.'`);
    i += 1 + rawSub.length;
  }
  if (i !== rest.length) throw invalidPath(`${where}: unexpected '${rest.slice(i)}' in the path '${path}'`);

  const attribute = name.toLowerCase();
  let filter: FilterNode | undefined;
  if (filterText !== undefined) {
    const allowed = filterAttributes(attribute);
    if (!allowed) throw invalidPath(`${where}: '${name}' does not support a value filter ('${path}')`);
    try {
      filter = parseFilter(filterText, allowed);
    } catch (error) {
      if (!(error instanceof ScimError)) throw error;
      throw new ScimError(
        400,
        'invalidFilter',
        `${where}: the filter in the path '${path}': ${error.detail}`,
      );
    }
  }
  return { schema, attribute, rawAttribute: name, filter, sub: rawSub?.toLowerCase(), rawSub };
}

/** Index of the ']' closing a value filter that starts at `from`, skipping quoted strings; -1 if none. */
function closingBracket(text: string, from: number): number {
  let inString = false;
  for (let i = from; i < text.length; i += 1) {
    const c = text.charAt(i);
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === ']') {
      return i;
    }
  }
  return -1;
}
