import type { scim } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import { DomainError, type ErrorCode } from '@costgov/errors';
import { teamScoped, type ServiceImpl } from '@costgov/rpc';
import { ScimError } from './errors';
import { listResponseSchema } from './discovery';
import type { ScimGroups } from './groups';
import type { ListPage } from './paging';
import { project, type Projection } from './render';
import type { ScimUsers } from './users';

const codeOfStatus: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  412: 'conflict',
  413: 'bad_request',
};

/** A ScimError crosses gRPC as a DomainError whose metadata keeps the exact HTTP status and scimType. */
function toDomainError(error: ScimError): DomainError {
  const meta: Record<string, string> = { status: String(error.status) };
  if (error.scimType) meta.scimType = error.scimType;
  return new DomainError(codeOfStatus[error.status] ?? 'internal_error', error.message, [], meta);
}

async function scimCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw error instanceof ScimError ? toDomainError(error) : error;
  }
}

const encode = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));

/** The request body; the gateway sends what it parsed, so a failure here is a broken caller. */
function json(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return {};
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown;
  } catch {
    throw new ScimError(400, 'invalidSyntax', 'The body is not valid JSON.');
  }
}

function resourceReply(resource: Record<string, unknown>, projection: Projection | undefined) {
  const meta = resource.meta as { version?: string; location?: string } | undefined;
  return {
    resourceJson: encode(project(resource, projection)),
    etag: meta?.version ?? '',
    location: meta?.location ?? '',
  };
}

function listReply(page: ListPage, projection: Projection | undefined) {
  return {
    bodyJson: encode({
      schemas: [listResponseSchema],
      totalResults: page.totalResults,
      startIndex: page.startIndex,
      itemsPerPage: page.itemsPerPage,
      Resources: page.Resources.map((resource) => project(resource, projection)),
    }),
  };
}

const projectionOf = (p: scim.ScimProjection | undefined): Projection | undefined =>
  p && (p.attributes.length > 0 || p.excludedAttributes.length > 0)
    ? { attributes: p.attributes, excludedAttributes: p.excludedAttributes }
    : undefined;

export function scimRpc({
  db,
  users,
  groups,
  discover,
}: {
  db: Queryable;
  users: ScimUsers;
  groups: ScimGroups;
  discover: (endpoint: string, id: string, baseUrl: string) => object;
}): ServiceImpl<typeof scim.ScimService> {
  /** SCIM provisioning is an Enterprise plan feature: other teams get 403 on every SCIM call. */
  async function checkEnterprise(teamId: string): Promise<void> {
    const { rows } = await db.query<{ plan: string }>('SELECT plan FROM teams WHERE id = $1', [teamId]);
    if (rows[0]?.plan !== 'enterprise') {
      throw new ScimError(403, undefined, 'SCIM provisioning requires the Enterprise plan.');
    }
  }

  /** A SCIM call of an enterprise team, its ScimError crossing as a DomainError. */
  const scimHandler = <R, T>(run: (request: R, teamId: string) => Promise<T>) =>
    teamScoped((request: R, { teamId }) =>
      scimCall(async () => {
        await checkEnterprise(teamId);
        return run(request, teamId);
      }),
    );

  const listInput = (r: scim.ScimListRequest) => ({
    filter: r.filter || undefined,
    startIndex: r.startIndex || undefined,
    count: r.count < 0 ? undefined : r.count,
  });

  /** The six operations of one resource type, the same for users and groups. */
  interface Store {
    create(teamId: string, body: unknown, baseUrl: string): Promise<Record<string, unknown>>;
    get(teamId: string, id: string, baseUrl: string): Promise<Record<string, unknown>>;
    list(teamId: string, input: ReturnType<typeof listInput>, baseUrl: string): Promise<ListPage>;
    replace(
      teamId: string,
      id: string,
      body: unknown,
      baseUrl: string,
      ifMatch?: string,
    ): Promise<Record<string, unknown>>;
    patch(
      teamId: string,
      id: string,
      body: unknown,
      baseUrl: string,
      ifMatch?: string,
    ): Promise<Record<string, unknown>>;
    remove(teamId: string, id: string): Promise<unknown>;
  }

  function handlers(store: Store) {
    return {
      create: scimHandler(async (r: scim.ScimWriteRequest, teamId) =>
        resourceReply(await store.create(teamId, json(r.bodyJson), r.baseUrl), projectionOf(r.projection)),
      ),
      get: scimHandler(async (r: scim.ScimGetRequest, teamId) =>
        resourceReply(await store.get(teamId, r.id, r.baseUrl), projectionOf(r.projection)),
      ),
      list: scimHandler(async (r: scim.ScimListRequest, teamId) =>
        listReply(await store.list(teamId, listInput(r), r.baseUrl), projectionOf(r.projection)),
      ),
      replace: scimHandler(async (r: scim.ScimWriteRequest, teamId) =>
        resourceReply(
          await store.replace(teamId, r.id, json(r.bodyJson), r.baseUrl, r.ifMatch || undefined),
          projectionOf(r.projection),
        ),
      ),
      patch: scimHandler(async (r: scim.ScimWriteRequest, teamId) =>
        resourceReply(
          await store.patch(teamId, r.id, json(r.bodyJson), r.baseUrl, r.ifMatch || undefined),
          projectionOf(r.projection),
        ),
      ),
      remove: scimHandler(async (r: scim.ScimGetRequest, teamId) => {
        await store.remove(teamId, r.id);
        return {};
      }),
    };
  }

  const user = handlers({
    create: users.createUser,
    get: users.getUser,
    list: users.listUsers,
    replace: users.replaceUser,
    patch: users.patchUser,
    remove: users.deleteUser,
  });
  const group = handlers({
    create: groups.createGroup,
    get: groups.getGroup,
    list: groups.listGroups,
    replace: groups.replaceGroup,
    patch: groups.patchGroup,
    remove: groups.deleteGroup,
  });

  return {
    createUser: user.create,
    getUser: user.get,
    listUsers: user.list,
    replaceUser: user.replace,
    patchUser: user.patch,
    deleteUser: user.remove,
    createGroup: group.create,
    getGroup: group.get,
    listGroups: group.list,
    replaceGroup: group.replace,
    patchGroup: group.patch,
    deleteGroup: group.remove,
    discover: scimHandler(async (r: scim.ScimDiscoverRequest) => ({
      resourceJson: encode(discover(r.endpoint, r.id, r.baseUrl)),
      etag: '',
      location: '',
    })),
  };
}
