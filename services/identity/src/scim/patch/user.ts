import {
  coreUserSchema,
  enterpriseUserSchema,
  multiValuedUserAttributes,
  nameFields,
  type UserDoc,
} from './documents';
import { multiValueFilterAttributes, patchFilteredMultiValue, patchMultiValue } from './multi-valued';
import { applyEnterprise, normalizeManager } from './enterprise';
import { readPatchOperations, type PatchOperation } from './operations';
import { parsePath } from './paths';
import {
  invalidPath,
  invalidValue,
  isObject,
  mutability,
  noTarget,
  readBoolean,
  readOptionalString,
  readRequiredString,
  shown,
} from './values';

const userSchemas = [coreUserSchema, enterpriseUserSchema];
/** Read-only attributes: an explicit path to them is refused; inside a path-less value they are ignored. */
const userReadOnly: ReadonlySet<string> = new Set(['id', 'meta', 'groups', 'schemas']);
const multiValued = new Map(multiValuedUserAttributes.map((spec) => [spec.attribute.toLowerCase(), spec]));

interface UserWork {
  doc: UserDoc;
  enterprise: Map<string, unknown>;
}

/** Applies a PatchOp body to a user; returns the new user. */
export function applyUserPatch(doc: UserDoc, body: unknown): UserDoc {
  const operations = readPatchOperations(body);
  const copy = structuredClone(doc);
  const work: UserWork = { doc: copy, enterprise: new Map(Object.entries(copy.enterprise)) };
  for (const operation of operations) {
    if (operation.path === undefined) applyUserValueObject(work, operation, operation.value);
    else applyUserPath(work, operation, operation.path, operation.value);
  }
  normalizeManager(work.enterprise);
  return { ...work.doc, enterprise: Object.fromEntries(work.enterprise) };
}

/** A path-less add or replace: each key of the value object is a path (RFC 7644 §3.5.2.1, §3.5.2.3). */
function applyUserValueObject(work: UserWork, operation: PatchOperation, value: unknown): void {
  if (!isObject(value))
    throw invalidValue(`${operation.where}: the value must be an object, got ${shown(value)}`);
  for (const key of Object.keys(value)) {
    if (userReadOnly.has(key.toLowerCase())) continue; // e.g. the id Okta echoes back
    applyUserPath(work, operation, key, value[key]);
  }
}

/**
 * RFC 7643 core User attributes this service does not store. Identity providers send them by default
 * (Entra maps title, preferredLanguage and addresses), so they are accepted and dropped
 * rather than failing the provisioning of the user.
 */
export const ignoredUserAttributes = new Set([
  'nickname',
  'profileurl',
  'title',
  'usertype',
  'preferredlanguage',
  'locale',
  'timezone',
  'ims',
  'photos',
  'addresses',
  'entitlements',
  'roles',
  'x509certificates',
]);

const leadingAttribute = (path: string) =>
  path
    .replace(new RegExp(`^${coreUserSchema.replace(/[.]/g, '\\.')}:`, 'i'), '')
    .split(/[.[]/)[0]!
    .toLowerCase();

function applyUserPath(work: UserWork, operation: PatchOperation, path: string, value: unknown): void {
  const { op, where } = operation;
  if (ignoredUserAttributes.has(leadingAttribute(path))) return;
  const parsed = parsePath(path, where, userSchemas, (attribute) =>
    multiValued.has(attribute) ? multiValueFilterAttributes : undefined,
  );
  if (parsed === 'ignored') return;
  if (parsed.schema === enterpriseUserSchema.toLowerCase()) {
    applyEnterprise(work.enterprise, operation, parsed, value);
    return;
  }
  const { attribute, filter, sub } = parsed;
  const doc = work.doc;
  if (attribute === '') {
    if (op === 'remove') throw noTarget(`${where}: cannot remove the whole resource ('${path}')`);
    applyUserValueObject(work, operation, value);
    return;
  }
  if (userReadOnly.has(attribute)) throw mutability(`${where}: '${parsed.rawAttribute}' is read-only`);
  const spec = multiValued.get(attribute);
  if (spec) {
    const current = doc[spec.attribute];
    doc[spec.attribute] = filter
      ? patchFilteredMultiValue(spec, current, operation, filter, parsed.rawSub, value, path)
      : patchMultiValue(spec, current, operation, parsed.rawSub, value, path);
    return;
  }
  if (filter) throw invalidPath(`${where}: '${parsed.rawAttribute}' does not support a value filter`);
  if (attribute === 'name') {
    patchName(doc, operation, sub, value, path);
    return;
  }
  if (sub !== undefined) throw invalidPath(`${where}: unknown attribute '${path}'`);
  switch (attribute) {
    case 'password':
      return; // IdPs send generated placeholder passwords; sign-in is through the IdP
    case 'username':
      if (op === 'remove') throw invalidValue(`${where}: userName is required and cannot be removed`);
      doc.userName = readRequiredString(value, where, 'userName');
      return;
    case 'active':
      if (op === 'remove') throw invalidValue(`${where}: active is required and cannot be removed`);
      doc.active = readBoolean(value, where, 'active');
      return;
    case 'externalid': {
      const externalId = op === 'remove' ? undefined : readOptionalString(value, where, 'externalId');
      if (externalId === undefined) delete doc.externalId;
      else doc.externalId = externalId;
      return;
    }
    case 'displayname': {
      const displayName = op === 'remove' ? undefined : readOptionalString(value, where, 'displayName');
      if (displayName === undefined) delete doc.displayName;
      else doc.displayName = displayName;
      return;
    }
    default:
      throw invalidPath(`${where}: unknown or unsupported attribute '${path}'`);
  }
}

function patchName(
  doc: UserDoc,
  { op, where }: PatchOperation,
  sub: string | undefined,
  value: unknown,
  path: string,
): void {
  if (sub === undefined) {
    if (op === 'remove' || value === null) {
      doc.name = {};
      return;
    }
    if (!isObject(value)) throw invalidValue(`${where}: 'name' must be an object, got ${shown(value)}`);
    // add and replace of a complex attribute both set the given sub-attributes and keep the others.
    for (const key of Object.keys(value)) {
      const field = nameFields.get(key.toLowerCase());
      if (!field) throw invalidPath(`${where}: unknown attribute 'name.${key}'`);
      setNameField(doc, field, readOptionalString(value[key], where, `name.${key}`));
    }
    return;
  }
  const field = nameFields.get(sub);
  if (!field) throw invalidPath(`${where}: unknown attribute '${path}'`);
  setNameField(doc, field, op === 'remove' ? undefined : readOptionalString(value, where, path));
}

function setNameField(doc: UserDoc, field: keyof UserDoc['name'], value: string | undefined): void {
  if (value === undefined) delete doc.name[field];
  else doc.name[field] = value;
}
