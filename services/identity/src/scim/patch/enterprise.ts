import { enterpriseUserSchema } from './documents';
import type { PatchOperation } from './operations';
import { parsePath, type ParsedPath } from './paths';
import { field, invalidPath, invalidValue, isObject, shown } from './values';

const knownEnterpriseAttributes: ReadonlyMap<string, string> = new Map(
  ['employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager'].map((name) => [
    name.toLowerCase(),
    name,
  ]),
);

const stringAttributes: ReadonlySet<string> = new Set([
  'employeenumber',
  'costcenter',
  'organization',
  'division',
  'department',
]);

/** Enterprise-extension attributes are kept as sent, under the spelling of the first sender. */
export function applyEnterprise(
  enterprise: Map<string, unknown>,
  { op, where }: PatchOperation,
  parsed: ParsedPath,
  value: unknown,
): void {
  if (parsed.filter) throw invalidPath(`${where}: value filters are not supported on enterprise attributes`);
  if (parsed.attribute === '') {
    if (op === 'remove') {
      enterprise.clear();
      return;
    }
    if (!isObject(value)) {
      throw invalidValue(`${where}: '${enterpriseUserSchema}' needs an object value, got ${shown(value)}`);
    }
    for (const key of Object.keys(value)) {
      const nested = parsePath(key, where, [], () => undefined);
      if (nested === 'ignored' || nested.filter)
        throw invalidPath(`${where}: '${key}' is not an attribute name`);
      applyEnterprise(enterprise, { op, where, path: key, value: value[key] }, nested, value[key]);
    }
    return;
  }
  const key = existingKey(enterprise, parsed.rawAttribute) ?? knownEnterpriseAttributes.get(parsed.attribute);
  const name = key ?? parsed.rawAttribute;
  const remove = op === 'remove' || value === null;
  // RFC 7643 §4.3 types them as strings; /Schemas and the OpenAPI document say so.
  if (
    stringAttributes.has(parsed.attribute) &&
    !remove &&
    (parsed.rawSub !== undefined || typeof value !== 'string')
  ) {
    throw invalidValue(`${where}: '${name}' must be a string, got ${shown(value)}`);
  }
  if (parsed.rawSub === undefined) {
    if (remove) enterprise.delete(name);
    else enterprise.set(name, structuredClone(value));
    return;
  }
  const current = enterprise.get(name);
  const inner = new Map(isObject(current) ? Object.entries(current) : []);
  const subName = existingKey(inner, parsed.rawSub) ?? parsed.rawSub;
  if (remove) inner.delete(subName);
  else inner.set(subName, structuredClone(value));
  enterprise.set(name, Object.fromEntries(inner));
}

function existingKey(map: ReadonlyMap<string, unknown>, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const key of map.keys()) if (key.toLowerCase() === lower) return key;
  return undefined;
}

/**
 * `manager` is complex (RFC 7643 §4.3): Entra sends the manager's id as a bare string, others send
 * `{value}`; both are stored as `{value}`. `$ref` and `displayName` are derived when rendering, so what a
 * client sends for them is dropped. An empty id removes the manager.
 */
export function normalizeManager(enterprise: Map<string, unknown>): void {
  const key = existingKey(enterprise, 'manager');
  if (key === undefined) return;
  const manager = enterprise.get(key);
  const id = isObject(manager) ? field(manager, 'value') : manager;
  enterprise.delete(key);
  if (id === undefined || id === null || id === '') return;
  if (typeof id !== 'string') {
    throw invalidValue(`the manager must be a user id or {"value": <user id>}, got ${shown(manager)}`);
  }
  enterprise.set('manager', { value: id });
}
