import { matchesFilter, type FilterAttribute, type FilterNode } from '../filter';
import type { ScimEmail } from './documents';
import type { PatchOperation } from './operations';
import {
  asList,
  invalidPath,
  invalidValue,
  isObject,
  noTarget,
  readBoolean,
  readOptionalString,
  readRequiredString,
  shown,
} from './values';

export const emailFilterAttributes: Readonly<Record<string, FilterAttribute>> = Object.freeze({
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

export function readEmail(value: unknown, where: string): ScimEmail {
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
  if (filter.kind === 'valuePath' || filter.op !== 'eq' || filter.value === null) return undefined;
  if (filter.attribute === 'type' && typeof filter.value === 'string') return { type: filter.value };
  if (filter.attribute === 'value' && typeof filter.value === 'string') return { value: filter.value };
  if (filter.attribute === 'primary' && typeof filter.value === 'boolean') return { primary: filter.value };
  return undefined;
}

export function patchEmails(
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

export function patchFilteredEmails(
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
