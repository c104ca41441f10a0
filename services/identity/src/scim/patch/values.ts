import { ScimError } from '../errors';

// Errors and readers of JSON values, shared by every part of the PATCH engine.

export const invalidSyntax = (detail: string) => new ScimError(400, 'invalidSyntax', detail);
export const invalidValue = (detail: string) => new ScimError(400, 'invalidValue', detail);
export const invalidPath = (detail: string) => new ScimError(400, 'invalidPath', detail);
export const noTarget = (detail: string) => new ScimError(400, 'noTarget', detail);
export const mutability = (detail: string) => new ScimError(400, 'mutability', detail);

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const shown = (value: unknown): string => (value === undefined ? 'nothing' : JSON.stringify(value));

/** An own property of a JSON object, its name matched case-insensitively (RFC 7643 §2.1). */
export function field(object: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(object, name)) return object[name];
  const key = Object.keys(object).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : object[key];
}

export function readBoolean(value: unknown, where: string, label: string): boolean {
  if (typeof value === 'boolean') return value;
  // Entra sends booleans as the strings "True" and "False".
  if (typeof value === 'string') {
    const lower = value.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
  }
  throw invalidValue(`${where}: '${label}' must be true or false, got ${shown(value)}`);
}

export function readRequiredString(value: unknown, where: string, label: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw invalidValue(`${where}: '${label}' must be a non-empty string, got ${shown(value)}`);
  }
  return value;
}

/** A string, or undefined for null (RFC 7643 §2.5: null is the same as unassigned). */
export function readOptionalString(value: unknown, where: string, label: string): string | undefined {
  if (value === null) return undefined;
  if (typeof value !== 'string')
    throw invalidValue(`${where}: '${label}' must be a string, got ${shown(value)}`);
  return value;
}

export function asList(value: unknown, where: string, label: string): unknown[] {
  if (Array.isArray(value)) return value;
  if (isObject(value)) return [value]; // a single value where an array is due: some clients send that
  throw invalidValue(`${where}: '${label}' must be an array, got ${shown(value)}`);
}
