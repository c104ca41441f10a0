import type { FilterAttribute, FilterNode } from '../filter';
import { matchesFilter } from '../filter';
import { coreGroupSchema, type GroupDoc } from './documents';
import { readPatchOperations, type PatchOperation } from './operations';
import { parsePath } from './paths';
import {
  asList,
  field,
  invalidPath,
  invalidValue,
  isObject,
  mutability,
  noTarget,
  readOptionalString,
  readRequiredString,
  shown,
} from './values';

const groupSchemas = [coreGroupSchema];
const groupReadOnly: ReadonlySet<string> = new Set(['id', 'meta', 'schemas']);
const memberFilterAttributes: Readonly<Record<string, FilterAttribute>> = Object.freeze({
  value: { type: 'string', caseExact: true },
});
/**
 * The user ids of a `members` value. A member is known by its `value` alone: every other key is ignored,
 * whether RFC 7643's (`display`, `$ref`, `type`) or an IdP's own (Microsoft Entra sends `displayName`),
 * as unstored attributes of a user are, so that one extra key does not refuse the whole request. Keys
 * that reach a prototype were refused with the body (assertSafeKeys).
 */
function readMemberIds(value: unknown, where: string): string[] {
  return asList(value, where, 'members').map((member) => {
    if (!isObject(member)) throw invalidValue(`${where}: a member must be an object, got ${shown(member)}`);
    const id = field(member, 'value');
    if (typeof id !== 'string' || id === '') {
      throw invalidValue(`${where}: a member's 'value' must be a user id string, got ${shown(id)}`);
    }
    return id;
  });
}

/** Applies a PatchOp body to a group; returns the new group. */
export function applyGroupPatch(doc: GroupDoc, body: unknown): GroupDoc {
  const operations = readPatchOperations(body);
  const work: GroupDoc = structuredClone(doc);
  work.members = [...new Set(work.members)];
  for (const operation of operations) {
    if (operation.path === undefined) applyGroupValueObject(work, operation, operation.value);
    else applyGroupPath(work, operation, operation.path, operation.value);
  }
  return work;
}

function applyGroupValueObject(work: GroupDoc, operation: PatchOperation, value: unknown): void {
  if (!isObject(value))
    throw invalidValue(`${operation.where}: the value must be an object, got ${shown(value)}`);
  for (const key of Object.keys(value)) {
    if (groupReadOnly.has(key.toLowerCase())) continue; // Okta's rename sends {id, displayName}
    applyGroupPath(work, operation, key, value[key]);
  }
}

function applyGroupPath(work: GroupDoc, operation: PatchOperation, path: string, value: unknown): void {
  const { op, where } = operation;
  const parsed = parsePath(path, where, groupSchemas, (attribute) =>
    attribute === 'members' ? memberFilterAttributes : undefined,
  );
  if (parsed === 'ignored') return;
  const { attribute, filter, sub } = parsed;
  if (attribute === '') {
    if (op === 'remove') throw noTarget(`${where}: cannot remove the whole resource ('${path}')`);
    applyGroupValueObject(work, operation, value);
    return;
  }
  if (groupReadOnly.has(attribute)) throw mutability(`${where}: '${parsed.rawAttribute}' is read-only`);
  if (sub !== undefined) throw invalidPath(`${where}: unknown or unsupported attribute '${path}'`);
  if (attribute === 'members') {
    work.members = patchMembers(work.members, operation, filter, value, path);
    return;
  }
  if (filter) throw invalidPath(`${where}: '${parsed.rawAttribute}' does not support a value filter`);
  switch (attribute) {
    case 'displayname':
      if (op === 'remove') throw invalidValue(`${where}: displayName is required and cannot be removed`);
      work.displayName = readRequiredString(value, where, 'displayName');
      return;
    case 'externalid': {
      const externalId = op === 'remove' ? undefined : readOptionalString(value, where, 'externalId');
      if (externalId === undefined) delete work.externalId;
      else work.externalId = externalId;
      return;
    }
    default:
      throw invalidPath(`${where}: unknown or unsupported attribute '${path}'`);
  }
}

function patchMembers(
  members: string[],
  { op, where }: PatchOperation,
  filter: FilterNode | undefined,
  value: unknown,
  path: string,
): string[] {
  if (filter) {
    if (op !== 'remove') throw invalidPath(`${where}: '${op}' cannot target a filtered path ('${path}')`);
    return members.filter(
      (id) =>
        !matchesFilter(filter, memberFilterAttributes, (attribute) =>
          attribute === 'value' ? id : undefined,
        ),
    );
  }
  if (op === 'remove') {
    if (value === undefined || value === null) return [];
    const remove = new Set(readMemberIds(value, where));
    return members.filter((id) => !remove.has(id));
  }
  if (op === 'replace' && value === null) return [];
  const incoming = readMemberIds(value, where);
  return [...new Set([...(op === 'add' ? members : []), ...incoming])];
}
