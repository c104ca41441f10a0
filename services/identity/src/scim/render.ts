import { ScimError } from './errors';
import { coreGroupSchema, coreUserSchema, enterpriseUserSchema, type GroupDoc, type UserDoc } from './patch';

export interface Projection {
  attributes: string[];
  excludedAttributes: string[];
}

export interface ResourceMeta {
  id: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export const etagOf = (version: number): string => `W/"${version}"`;

/** If-Match of a PUT or PATCH: the write applies only to the version the client last saw. */
export function checkIfMatch(
  resourceType: 'user' | 'group',
  version: number,
  ifMatch: string | undefined,
): void {
  if (ifMatch && ifMatch !== '*' && ifMatch !== etagOf(version)) {
    throw new ScimError(
      412,
      undefined,
      `The ${resourceType} has changed (version ${etagOf(version)}, If-Match ${ifMatch}).`,
    );
  }
}

const meta = (resourceType: 'User' | 'Group', resource: ResourceMeta, baseUrl: string) => ({
  resourceType,
  created: resource.createdAt.toISOString(),
  lastModified: resource.updatedAt.toISOString(),
  location: `${baseUrl}/${resourceType}s/${resource.id}`,
  version: etagOf(resource.version),
});

/** A user named as manager, as far as the team knows them. */
export interface Manager {
  id: string;
  displayName: string | undefined;
}

/** The manager's id of a user: stored as `{value}`, or as a bare string by versions before that. */
export function managerIdOf(user: UserDoc): string | undefined {
  const manager = user.enterprise.manager;
  const id =
    typeof manager === 'object' && manager !== null ? (manager as { value?: unknown }).value : manager;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * The enterprise extension as returned: `manager` is the complex value of RFC 7643 §4.3, with `$ref` and
 * `displayName` when the manager is a user of the team (a manager sent by another id is returned as sent).
 */
function enterpriseOf(
  user: UserDoc,
  managers: ReadonlyMap<string, Manager>,
  baseUrl: string,
): Record<string, unknown> {
  const id = managerIdOf(user);
  const { manager: _stored, ...rest } = user.enterprise;
  if (id === undefined) return rest;
  const known = managers.get(id.toLowerCase()) ?? managers.get(id);
  return {
    ...rest,
    manager: {
      value: id,
      ...(known ? { $ref: `${baseUrl}/Users/${known.id}` } : {}),
      ...(known?.displayName !== undefined ? { displayName: known.displayName } : {}),
    },
  };
}

export function userResource(
  user: UserDoc & ResourceMeta,
  groups: Array<{ id: string; displayName: string }>,
  managers: ReadonlyMap<string, Manager>,
  baseUrl: string,
): Record<string, unknown> {
  const enterprise = enterpriseOf(user, managers, baseUrl);
  const hasEnterprise = Object.keys(enterprise).length > 0;
  return {
    schemas: hasEnterprise ? [coreUserSchema, enterpriseUserSchema] : [coreUserSchema],
    id: user.id,
    ...(user.externalId !== undefined ? { externalId: user.externalId } : {}),
    userName: user.userName,
    name: user.name,
    ...(user.displayName !== undefined ? { displayName: user.displayName } : {}),
    emails: user.emails,
    phoneNumbers: user.phoneNumbers,
    active: user.active,
    groups: groups.map((g) => ({
      value: g.id,
      display: g.displayName,
      $ref: `${baseUrl}/Groups/${g.id}`,
      type: 'direct',
    })),
    ...(hasEnterprise ? { [enterpriseUserSchema]: enterprise } : {}),
    meta: meta('User', user, baseUrl),
  };
}

export function groupResource(
  group: GroupDoc & ResourceMeta,
  members: Array<{ id: string; userName: string }>,
  baseUrl: string,
): Record<string, unknown> {
  return {
    schemas: [coreGroupSchema],
    id: group.id,
    ...(group.externalId !== undefined ? { externalId: group.externalId } : {}),
    displayName: group.displayName,
    members: members.map((m) => ({
      value: m.id,
      display: m.userName,
      $ref: `${baseUrl}/Users/${m.id}`,
      type: 'User',
    })),
    meta: meta('Group', group, baseUrl),
  };
}

/** Attributes returned whatever the request asks (RFC 7643 `returned: always`). */
const alwaysReturned = new Set(['id', 'schemas']);

const pathOf = (attribute: string) =>
  attribute
    .replace(/^urn:ietf:params:scim:schemas:core:2\.0:(User|Group):/i, '')
    .toLowerCase()
    .split('.');

/**
 * Applies `attributes` / `excludedAttributes` (RFC 7644 section 3.9) to a rendered resource: top-level
 * attributes and one level of sub-attributes (`name.givenName`), matched without regard to case.
 */
export function project(
  resource: Record<string, unknown>,
  projection: Projection | undefined,
): Record<string, unknown> {
  if (!projection) return resource;
  const include = projection.attributes.map(pathOf);
  const exclude = projection.excludedAttributes.map(pathOf);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const name = key.toLowerCase();
    if (alwaysReturned.has(name)) {
      out[key] = value;
      continue;
    }
    if (include.length > 0) {
      const wanted = include.filter(([head]) => head === name);
      if (wanted.length === 0) continue;
      const subs = wanted.map((path) => path[1]).filter((s): s is string => s !== undefined);
      out[key] =
        subs.length > 0 && wanted.every((path) => path.length > 1) && isRecord(value)
          ? Object.fromEntries(Object.entries(value).filter(([sub]) => subs.includes(sub.toLowerCase())))
          : value;
      continue;
    }
    const dropped = exclude.filter(([head]) => head === name);
    if (dropped.some((path) => path.length === 1)) continue;
    const subs = dropped.map((path) => path[1]!);
    out[key] =
      subs.length > 0 && isRecord(value)
        ? Object.fromEntries(Object.entries(value).filter(([sub]) => !subs.includes(sub.toLowerCase())))
        : value;
  }
  return out;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
