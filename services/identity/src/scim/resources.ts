import { charLength } from '@costgov/errors';
import { ScimError } from './errors';
import {
  applyGroupPatch,
  applyUserPatch,
  assertSafeKeys,
  coreGroupSchema,
  coreUserSchema,
  multiValuedUserAttributes,
  patchOpSchema,
  type GroupDoc,
  type UserDoc,
} from './patch';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A full resource of a POST or PUT, read by the PATCH engine as one path-less replace onto defaults. */
function readResource<D>(body: unknown, schema: string, empty: D, apply: (doc: D, patch: unknown) => D): D {
  if (!isObject(body)) throw new ScimError(400, 'invalidSyntax', 'The body must be a JSON object.');
  // Here first, so that messages name the attribute as sent ('externalId ...'), not a PATCH operation.
  assertSafeKeys(body, '');
  const { schemas, ...attributes } = body;
  if (schemas !== undefined) {
    if (!Array.isArray(schemas) || !schemas.every((s) => typeof s === 'string')) {
      throw new ScimError(400, 'invalidValue', "'schemas' must be an array of schema URNs.");
    }
    if (!schemas.some((s) => s.toLowerCase() === schema.toLowerCase())) {
      throw new ScimError(400, 'invalidValue', `'schemas' must include ${schema}.`);
    }
  }
  try {
    return apply(empty, { schemas: [patchOpSchema], Operations: [{ op: 'replace', value: attributes }] });
  } catch (error) {
    // The engine names the operation; for a whole resource, the body is what the client sent.
    if (error instanceof ScimError)
      throw new ScimError(error.status, error.scimType, error.message.replace(/^Operations\[0\]:?\s*/, ''));
    throw error;
  }
}

/** A User of a POST or PUT: what is omitted takes its default (name, emails, phoneNumbers empty, active true). */
export function readUserResource(body: unknown): UserDoc {
  const user = readResource<UserDoc>(
    body,
    coreUserSchema,
    { userName: '', name: {}, emails: [], phoneNumbers: [], active: true, enterprise: {} },
    applyUserPatch,
  );
  checkUser(user);
  return user;
}

export function checkUser(user: UserDoc): void {
  if (!user.userName.trim()) throw new ScimError(400, 'invalidValue', "'userName' is required.");
  if (charLength(user.userName) > 256)
    throw new ScimError(400, 'invalidValue', "'userName' is longer than 256 characters.");
  for (const { attribute } of multiValuedUserAttributes) {
    if (user[attribute].length > 20)
      throw new ScimError(400, 'invalidValue', `'${attribute}' has more than 20 entries.`);
  }
}

/** A Group of a POST or PUT: `displayName` required, `members` default empty. */
export function readGroupResource(body: unknown): GroupDoc {
  const group = readResource<GroupDoc>(
    body,
    coreGroupSchema,
    { displayName: '', members: [] },
    applyGroupPatch,
  );
  checkGroup(group);
  return group;
}

export function checkGroup(group: GroupDoc): void {
  if (!group.displayName.trim()) throw new ScimError(400, 'invalidValue', "'displayName' is required.");
  if (charLength(group.displayName) > 256)
    throw new ScimError(400, 'invalidValue', "'displayName' is longer than 256 characters.");
  if (group.members.length > 10_000)
    throw new ScimError(400, 'invalidValue', "'members' has more than 10000 entries.");
}
