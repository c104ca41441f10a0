import { textProblem, truncateChars } from '@costgov/errors';
import { field, invalidPath, invalidSyntax, invalidValue, isObject, noTarget, shown } from './values';
import { patchOpSchema } from './documents';

export type PatchOpName = 'add' | 'replace' | 'remove';

export interface PatchOperation {
  op: PatchOpName;
  path: string | undefined;
  /** undefined when the operation has no value. */
  value: unknown;
  /** Where the operation is in the body, for error messages: `Operations[2]`. */
  where: string;
}

// Keys that reach Object.prototype when assigned or merged carelessly. Refused anywhere in a body and in
// any path segment, whatever their case.
export const forbiddenNames: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
const maxDepth = 32;

/**
 * Walks a whole body once: no key that reaches a prototype, no nesting deeper than `maxDepth`, and every
 * key and string follows the API's text rule (no NUL or control characters, well-formed Unicode).
 * `where` names the place in messages: 'body', or '' for a resource whose attributes are named alone.
 */
export function assertSafeKeys(value: unknown, where: string, depth = 0): void {
  const here = where || 'the body';
  if (depth > maxDepth) throw invalidValue(`${here}: nested more than ${maxDepth} levels deep`);
  if (typeof value === 'string') {
    const problem = textProblem(value);
    if (problem) throw invalidValue(`${here} ${problem}`);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => assertSafeKeys(item, `${where}[${i}]`, depth + 1));
  } else if (isObject(value)) {
    for (const key of Object.keys(value)) {
      const problem = textProblem(key);
      if (problem) throw invalidValue(`${here}: an attribute name ${problem}`);
      const shownKey = truncateChars(key, 64);
      if (forbiddenNames.has(key.toLowerCase()))
        throw invalidValue(`${here}: the key '${shownKey}' is not allowed`);
      assertSafeKeys(value[key], where ? `${where}.${shownKey}` : shownKey, depth + 1);
    }
  }
}

/** Validates a PatchOp body and returns its operations. */
export function readPatchOperations(body: unknown): PatchOperation[] {
  if (!isObject(body)) throw invalidSyntax('the PATCH body must be a JSON object');
  assertSafeKeys(body, 'body');
  const schemas = field(body, 'schemas');
  if (
    !Array.isArray(schemas) ||
    !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === patchOpSchema.toLowerCase())
  ) {
    throw invalidSyntax(`'schemas' must be an array containing '${patchOpSchema}'`);
  }
  const operations = field(body, 'Operations');
  if (!Array.isArray(operations))
    throw invalidSyntax(`'Operations' must be an array, got ${shown(operations)}`);
  return operations.map((raw, i): PatchOperation => {
    const where = `Operations[${i}]`;
    if (!isObject(raw)) throw invalidSyntax(`${where} must be an object, got ${shown(raw)}`);
    const opValue = field(raw, 'op');
    const op = typeof opValue === 'string' ? opValue.toLowerCase() : undefined;
    if (op !== 'add' && op !== 'replace' && op !== 'remove') {
      throw invalidSyntax(`${where}.op must be 'add', 'replace' or 'remove', got ${shown(opValue)}`);
    }
    const pathValue = field(raw, 'path');
    if (pathValue !== undefined && pathValue !== null && typeof pathValue !== 'string') {
      throw invalidSyntax(`${where}.path must be a string, got ${shown(pathValue)}`);
    }
    const path = typeof pathValue === 'string' ? pathValue : undefined;
    if (path !== undefined && path.trim() === '') throw invalidPath(`${where}.path is empty`);
    const value = field(raw, 'value');
    if (op !== 'remove' && value === undefined) throw invalidValue(`${where}: '${op}' needs a value`);
    if (op === 'remove' && path === undefined) throw noTarget(`${where}: 'remove' needs a path`);
    if (path === undefined && !isObject(value)) {
      throw invalidValue(`${where}: '${op}' without a path needs an object value, got ${shown(value)}`);
    }
    return { op, path, value, where };
  });
}
