import { matchesFilter, type FilterAttribute, type FilterNode } from '../filter';
import type { MultiValuedUserAttribute, ScimMultiValue } from './documents';
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

// One engine for the multi-valued complex User attributes of {value, type, primary} (emails, phoneNumbers):
// what is said of an email here holds of a phone number, with the attribute's name in every message.

/** The sub-attributes a value filter on `emails` or `phoneNumbers` may name. */
export const multiValueFilterAttributes: Readonly<Record<string, FilterAttribute>> = Object.freeze({
  value: { type: 'string', caseExact: false },
  type: { type: 'string', caseExact: false },
  primary: { type: 'boolean', caseExact: true },
});

function readSubAttribute(element: ScimMultiValue, attribute: string): string | boolean | undefined {
  if (attribute === 'value') return element.value;
  if (attribute === 'type') return element.type;
  if (attribute === 'primary') return element.primary;
  return undefined;
}

const article = (noun: string) => `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;

function readElement(
  { attribute, noun }: MultiValuedUserAttribute,
  value: unknown,
  where: string,
): ScimMultiValue {
  if (!isObject(value))
    throw invalidValue(`${where}: ${article(noun)} must be an object, got ${shown(value)}`);
  let text: string | undefined;
  let type: string | undefined;
  let primary: boolean | undefined;
  for (const key of Object.keys(value)) {
    const item = value[key];
    switch (key.toLowerCase()) {
      case 'value':
        text = readRequiredString(item, where, `${attribute}.value`);
        break;
      case 'type':
        type = readOptionalString(item, where, `${attribute}.type`);
        break;
      case 'primary':
        primary = item === null ? undefined : readBoolean(item, where, `${attribute}.primary`);
        break;
      case 'display':
        break; // derived by the service; not stored
      default:
        throw invalidPath(`${where}: unknown ${noun} attribute '${key}'`);
    }
  }
  if (text === undefined) throw invalidValue(`${where}: ${article(noun)} needs a string 'value'`);
  return {
    value: text,
    ...(type !== undefined ? { type } : {}),
    ...(primary !== undefined ? { primary } : {}),
  };
}

/** RFC 7643 §2.4: at most one primary value. */
function makeSolePrimary(values: ScimMultiValue[], keep: ScimMultiValue): void {
  for (const element of values) {
    if (element !== keep && element.primary === true) element.primary = false;
  }
}

/** Adds values, merging into an existing one with the same `value` (compared case-insensitively). */
function mergeValues(current: ScimMultiValue[], incoming: ScimMultiValue[]): ScimMultiValue[] {
  const out = current.map((element) => ({ ...element }));
  for (const element of incoming) {
    const index = out.findIndex((e) => e.value.toLowerCase() === element.value.toLowerCase());
    const merged = { ...out[index], ...element };
    if (index >= 0) out[index] = merged;
    else out.push(merged);
    if (merged.primary === true) makeSolePrimary(out, merged);
  }
  return out;
}

/** The value an `add`/`replace` through a value filter creates when nothing matches; undefined if unknowable. */
function elementTemplate(filter: FilterNode): Partial<ScimMultiValue> | undefined {
  if (filter.kind === 'and') {
    const left = elementTemplate(filter.left);
    const right = elementTemplate(filter.right);
    return left && right ? { ...left, ...right } : undefined;
  }
  if (filter.kind === 'valuePath' || filter.op !== 'eq' || filter.value === null) return undefined;
  if (filter.attribute === 'type' && typeof filter.value === 'string') return { type: filter.value };
  if (filter.attribute === 'value' && typeof filter.value === 'string') return { value: filter.value };
  if (filter.attribute === 'primary' && typeof filter.value === 'boolean') return { primary: filter.value };
  return undefined;
}

/** An operation on the whole attribute (`emails`, `phoneNumbers`, or a key of a path-less value). */
export function patchMultiValue(
  spec: MultiValuedUserAttribute,
  values: ScimMultiValue[],
  { op, where }: PatchOperation,
  rawSub: string | undefined,
  value: unknown,
  path: string,
): ScimMultiValue[] {
  const { attribute } = spec;
  if (rawSub !== undefined) {
    throw invalidPath(
      `${where}: '${path}' needs a value filter, such as '${attribute}[type eq "work"].value'`,
    );
  }
  if (op === 'remove') {
    if (value === undefined || value === null) return [];
    const remove = new Set(
      asList(value, where, attribute).map((e) => readElement(spec, e, where).value.toLowerCase()),
    );
    return values.filter((element) => !remove.has(element.value.toLowerCase()));
  }
  if (value === null && op === 'replace') return [];
  const incoming = asList(value, where, attribute).map((e) => readElement(spec, e, where));
  return mergeValues(op === 'add' ? values : [], incoming);
}

/** An operation through a value filter: `emails[type eq "work"]`, `phoneNumbers[type eq "mobile"].value`. */
export function patchFilteredMultiValue(
  spec: MultiValuedUserAttribute,
  values: ScimMultiValue[],
  { op, where }: PatchOperation,
  filter: FilterNode,
  rawSub: string | undefined,
  value: unknown,
  path: string,
): ScimMultiValue[] {
  const { noun } = spec;
  const sub = rawSub?.toLowerCase();
  if (sub !== undefined && !['value', 'type', 'primary', 'display'].includes(sub)) {
    throw invalidPath(`${where}: unknown attribute '${path}'`);
  }
  const out = values.map((element) => ({ ...element }));
  const matched = out.filter((element) =>
    matchesFilter(filter, multiValueFilterAttributes, (attribute) => readSubAttribute(element, attribute)),
  );
  if (sub === 'display') return out; // derived; not stored

  // Removing an email's address (or setting it to null) removes the email: an email is its address
  // (and a phone number its number).
  if (op === 'remove' || (sub === 'value' && value === null) || (sub === undefined && value === null)) {
    if (sub !== 'type' && sub !== 'primary') return out.filter((element) => !matched.includes(element));
    for (const element of matched) {
      if (sub === 'type') delete element.type;
      else delete element.primary;
    }
    return out;
  }

  if (sub === undefined) {
    const replacement = readElement(spec, value, where);
    if (matched.length === 0) return mergeValues(out, [{ ...elementTemplate(filter), ...replacement }]);
    const result = out.map((element) => (matched.includes(element) ? { ...replacement } : element));
    const primary = result.find((element) => element.primary === true);
    if (primary) makeSolePrimary(result, primary);
    return result;
  }
  if (sub === 'value') {
    const text = readRequiredString(value, where, path);
    if (matched.length > 0) {
      for (const element of matched) element.value = text;
      return out;
    }
    // Entra sets `emails[type eq "work"].value` (and `phoneNumbers[type eq "mobile"].value`) on users that
    // have no such value yet: create it.
    const template = elementTemplate(filter);
    if (!template) throw noTarget(`${where}: no ${noun} matches '${path}'`);
    return mergeValues(out, [{ ...template, value: text }]);
  }
  if (matched.length === 0) throw noTarget(`${where}: no ${noun} matches '${path}'`);
  if (sub === 'type') {
    const type = readOptionalString(value, where, path);
    for (const element of matched) {
      if (type === undefined) delete element.type;
      else element.type = type;
    }
  } else {
    const primary = readBoolean(value, where, path);
    for (const element of matched) element.primary = primary;
    const first = matched[0];
    if (primary && first) makeSolePrimary(out, first);
  }
  return out;
}
