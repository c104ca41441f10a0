import { ScimError } from './errors';
import { matchesFilter, parseFilter, type FilterAttribute, type FilterNode } from './filter';

/**
 * The SCIM PATCH engine (RFC 7644 §3.5.2): a pure function from a document and a PatchOp body to a new
 * document. It never mutates its input; a failing operation throws, so a request applies whole or not at
 * all. It accepts what Okta and Microsoft Entra really send: `op` in any case, `"True"`/`"False"`,
 * path-less operations whose value has dotted and URN keys, `emails[type eq "work"].value`,
 * `members[value eq "id"]`, member removal with a value array, and placeholder passwords.
 */

export const patchOpSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const coreUserSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const coreGroupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const enterpriseUserSchema = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

export interface ScimEmail {
  value: string;
  type?: string;
  primary?: boolean;
}

export interface UserDoc {
  userName: string;
  externalId?: string;
  name: { givenName?: string; familyName?: string; formatted?: string };
  displayName?: string;
  emails: ScimEmail[];
  active: boolean;
  /** Attributes of the enterprise extension (`enterpriseUserSchema`), kept as sent. */
  enterprise: Record<string, unknown>;
}

export interface GroupDoc {
  displayName: string;
  externalId?: string;
  /** User ids, unique, in the order they were added. */
  members: string[];
}

export type PatchOpName = 'add' | 'replace' | 'remove';

export interface PatchOperation {
  op: PatchOpName;
  path: string | undefined;
  /** undefined when the operation has no value. */
  value: unknown;
  /** Where the operation is in the body, for error messages: `Operations[2]`. */
  where: string;
}

const invalidSyntax = (detail: string) => new ScimError(400, 'invalidSyntax', detail);
const invalidValue = (detail: string) => new ScimError(400, 'invalidValue', detail);
const invalidPath = (detail: string) => new ScimError(400, 'invalidPath', detail);
const noTarget = (detail: string) => new ScimError(400, 'noTarget', detail);
const mutability = (detail: string) => new ScimError(400, 'mutability', detail);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const shown = (value: unknown): string => (value === undefined ? 'nothing' : JSON.stringify(value));

// Keys that reach Object.prototype when assigned or merged carelessly. Refused anywhere in a body and in
// any path segment, whatever their case.
const forbiddenNames: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
const maxDepth = 32;

function assertSafeKeys(value: unknown, where: string, depth = 0): void {
  if (depth > maxDepth) throw invalidValue(`${where}: nested more than ${maxDepth} levels deep`);
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertSafeKeys(item, `${where}[${i}]`, depth + 1));
  } else if (isObject(value)) {
    for (const key of Object.keys(value)) {
      if (forbiddenNames.has(key.toLowerCase()))
        throw invalidValue(`${where}: the key '${key}' is not allowed`);
      assertSafeKeys(value[key], `${where}.${key}`, depth + 1);
    }
  }
}

function assertSafePath(path: string, where: string): void {
  // Quoted filter values ("constructor@example.com") are data, not segments.
  const segments = path.replace(/"(?:[^"\\]|\\.)*"/g, '""').split(/[^A-Za-z0-9_$]+/);
  for (const segment of segments) {
    if (forbiddenNames.has(segment.toLowerCase())) {
      throw invalidValue(`${where}: the path '${path}' contains '${segment}', which is not allowed`);
    }
  }
}

/** An own property of a JSON object, its name matched case-insensitively (RFC 7643 §2.1). */
function field(object: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(object, name)) return object[name];
  const key = Object.keys(object).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : object[key];
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

// ---------------------------------------------------------------------------------------------------
// Paths: [schema URN ':'] attribute ['[' filter ']'] ['.' subAttribute], case-insensitive.

interface ParsedPath {
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
function parsePath(
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

// ---------------------------------------------------------------------------------------------------
// Values

function readBoolean(value: unknown, where: string, label: string): boolean {
  if (typeof value === 'boolean') return value;
  // Entra sends booleans as the strings "True" and "False".
  if (typeof value === 'string') {
    const lower = value.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
  }
  throw invalidValue(`${where}: '${label}' must be true or false, got ${shown(value)}`);
}

function readRequiredString(value: unknown, where: string, label: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw invalidValue(`${where}: '${label}' must be a non-empty string, got ${shown(value)}`);
  }
  return value;
}

/** A string, or undefined for null (RFC 7643 §2.5: null is the same as unassigned). */
function readOptionalString(value: unknown, where: string, label: string): string | undefined {
  if (value === null) return undefined;
  if (typeof value !== 'string')
    throw invalidValue(`${where}: '${label}' must be a string, got ${shown(value)}`);
  return value;
}

function asList(value: unknown, where: string, label: string): unknown[] {
  if (Array.isArray(value)) return value;
  if (isObject(value)) return [value]; // a single value where an array is due: some clients send that
  throw invalidValue(`${where}: '${label}' must be an array, got ${shown(value)}`);
}

// ---------------------------------------------------------------------------------------------------
// Users

const userSchemas = [coreUserSchema, enterpriseUserSchema];
/** Read-only attributes: an explicit path to them is refused; inside a path-less value they are ignored. */
const userReadOnly: ReadonlySet<string> = new Set(['id', 'meta', 'groups', 'schemas']);
const nameFields: ReadonlyMap<string, keyof UserDoc['name']> = new Map([
  ['givenname', 'givenName'],
  ['familyname', 'familyName'],
  ['formatted', 'formatted'],
]);
const knownEnterpriseAttributes: ReadonlyMap<string, string> = new Map(
  ['employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager'].map((name) => [
    name.toLowerCase(),
    name,
  ]),
);

const emailFilterAttributes: Readonly<Record<string, FilterAttribute>> = Object.freeze({
  value: { type: 'string', caseExact: false },
  type: { type: 'string', caseExact: false },
  primary: { type: 'boolean', caseExact: true },
});

function readEmailAttribute(email: ScimEmail, attribute: string): string | boolean | undefined {
  if (attribute === 'value') return email.value;
  if (attribute === 'type') return email.type;
  if (attribute === 'primary') return email.primary;
  return undefined;
}

function readEmail(value: unknown, where: string): ScimEmail {
  if (!isObject(value)) throw invalidValue(`${where}: an email must be an object, got ${shown(value)}`);
  let address: string | undefined;
  let type: string | undefined;
  let primary: boolean | undefined;
  for (const key of Object.keys(value)) {
    const item = value[key];
    switch (key.toLowerCase()) {
      case 'value':
        address = readRequiredString(item, where, 'emails.value');
        break;
      case 'type':
        type = readOptionalString(item, where, 'emails.type');
        break;
      case 'primary':
        primary = item === null ? undefined : readBoolean(item, where, 'emails.primary');
        break;
      case 'display':
        break; // derived by the service; not stored
      default:
        throw invalidPath(`${where}: unknown email attribute '${key}'`);
    }
  }
  if (address === undefined) throw invalidValue(`${where}: an email needs a string 'value'`);
  return {
    value: address,
    ...(type !== undefined ? { type } : {}),
    ...(primary !== undefined ? { primary } : {}),
  };
}

/** RFC 7643 §2.4: at most one primary value. */
function makeSolePrimary(emails: ScimEmail[], keep: ScimEmail): void {
  for (const email of emails) {
    if (email !== keep && email.primary === true) email.primary = false;
  }
}

/** Adds emails, merging into an existing one with the same address (compared case-insensitively). */
function mergeEmails(current: ScimEmail[], incoming: ScimEmail[]): ScimEmail[] {
  const out = current.map((email) => ({ ...email }));
  for (const email of incoming) {
    const index = out.findIndex((e) => e.value.toLowerCase() === email.value.toLowerCase());
    const merged = { ...out[index], ...email };
    if (index >= 0) out[index] = merged;
    else out.push(merged);
    if (merged.primary === true) makeSolePrimary(out, merged);
  }
  return out;
}

/** The email an `add`/`replace` through a value filter creates when nothing matches; undefined if unknowable. */
function emailTemplate(filter: FilterNode): Partial<ScimEmail> | undefined {
  if (filter.kind === 'and') {
    const left = emailTemplate(filter.left);
    const right = emailTemplate(filter.right);
    return left && right ? { ...left, ...right } : undefined;
  }
  if (filter.op !== 'eq' || filter.value === null) return undefined;
  if (filter.attribute === 'type' && typeof filter.value === 'string') return { type: filter.value };
  if (filter.attribute === 'value' && typeof filter.value === 'string') return { value: filter.value };
  if (filter.attribute === 'primary' && typeof filter.value === 'boolean') return { primary: filter.value };
  return undefined;
}

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
 * (Entra maps title, preferredLanguage, phoneNumbers and addresses), so they are accepted and dropped
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
  'phonenumbers',
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
    attribute === 'emails' ? emailFilterAttributes : undefined,
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
  if (attribute === 'emails') {
    doc.emails = filter
      ? patchFilteredEmails(doc.emails, operation, filter, parsed.rawSub, value, path)
      : patchEmails(doc.emails, operation, parsed.rawSub, value, path);
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

function patchEmails(
  emails: ScimEmail[],
  { op, where }: PatchOperation,
  rawSub: string | undefined,
  value: unknown,
  path: string,
): ScimEmail[] {
  if (rawSub !== undefined) {
    throw invalidPath(`${where}: '${path}' needs a value filter, such as 'emails[type eq "work"].value'`);
  }
  if (op === 'remove') {
    if (value === undefined || value === null) return [];
    const remove = new Set(
      asList(value, where, 'emails').map((e) => readEmail(e, where).value.toLowerCase()),
    );
    return emails.filter((email) => !remove.has(email.value.toLowerCase()));
  }
  if (value === null && op === 'replace') return [];
  const incoming = asList(value, where, 'emails').map((e) => readEmail(e, where));
  return mergeEmails(op === 'add' ? emails : [], incoming);
}

function patchFilteredEmails(
  emails: ScimEmail[],
  { op, where }: PatchOperation,
  filter: FilterNode,
  rawSub: string | undefined,
  value: unknown,
  path: string,
): ScimEmail[] {
  const sub = rawSub?.toLowerCase();
  if (sub !== undefined && !['value', 'type', 'primary', 'display'].includes(sub)) {
    throw invalidPath(`${where}: unknown attribute '${path}'`);
  }
  const out = emails.map((email) => ({ ...email }));
  const matched = out.filter((email) =>
    matchesFilter(filter, emailFilterAttributes, (attribute) => readEmailAttribute(email, attribute)),
  );
  if (sub === 'display') return out; // derived; not stored

  // Removing an email's address (or setting it to null) removes the email: an email is its address.
  if (op === 'remove' || (sub === 'value' && value === null) || (sub === undefined && value === null)) {
    if (sub !== 'type' && sub !== 'primary') return out.filter((email) => !matched.includes(email));
    for (const email of matched) {
      if (sub === 'type') delete email.type;
      else delete email.primary;
    }
    return out;
  }

  if (sub === undefined) {
    const replacement = readEmail(value, where);
    if (matched.length === 0) return mergeEmails(out, [{ ...emailTemplate(filter), ...replacement }]);
    const result = out.map((email) => (matched.includes(email) ? { ...replacement } : email));
    const primary = result.find((email) => email.primary === true);
    if (primary) makeSolePrimary(result, primary);
    return result;
  }
  if (sub === 'value') {
    const address = readRequiredString(value, where, path);
    if (matched.length > 0) {
      for (const email of matched) email.value = address;
      return out;
    }
    // Entra sets `emails[type eq "work"].value` on users that have no work email yet: create it.
    const template = emailTemplate(filter);
    if (!template) throw noTarget(`${where}: no email matches '${path}'`);
    return mergeEmails(out, [{ ...template, value: address }]);
  }
  if (matched.length === 0) throw noTarget(`${where}: no email matches '${path}'`);
  if (sub === 'type') {
    const type = readOptionalString(value, where, path);
    for (const email of matched) {
      if (type === undefined) delete email.type;
      else email.type = type;
    }
  } else {
    const primary = readBoolean(value, where, path);
    for (const email of matched) email.primary = primary;
    const first = matched[0];
    if (primary && first) makeSolePrimary(out, first);
  }
  return out;
}

/** Enterprise-extension attributes are kept as sent, under the spelling of the first sender. */
function applyEnterprise(
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

// ---------------------------------------------------------------------------------------------------
// Groups

const groupSchemas = [coreGroupSchema];
const groupReadOnly: ReadonlySet<string> = new Set(['id', 'meta', 'schemas']);
const memberFilterAttributes: Readonly<Record<string, FilterAttribute>> = Object.freeze({
  value: { type: 'string', caseExact: true },
});
const memberIgnoredKeys: ReadonlySet<string> = new Set(['display', '$ref', 'type']);

function readMemberIds(value: unknown, where: string): string[] {
  return asList(value, where, 'members').map((member) => {
    if (!isObject(member)) throw invalidValue(`${where}: a member must be an object, got ${shown(member)}`);
    for (const key of Object.keys(member)) {
      if (key.toLowerCase() !== 'value' && !memberIgnoredKeys.has(key.toLowerCase())) {
        throw invalidPath(`${where}: unknown member attribute '${key}'`);
      }
    }
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
