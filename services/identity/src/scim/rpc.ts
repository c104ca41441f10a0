import type { JsonObject } from '@bufbuild/protobuf';
import type { scim } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import { BadRequestError, DomainError, type ErrorCode } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import { ScimError } from './errors';
import type { ScimGroups } from './groups';
import type { ListPage } from './paging';
import { etagOf, project, type Projection } from './render';
import type { ScimUsers } from './users';

const listResponseSchema = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

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

// protobuf-es maps google.protobuf.Struct to a plain JSON object on both sides.
const struct = (value: Record<string, unknown>): JsonObject => value as JsonObject;
const json = (value: JsonObject | undefined): unknown => value ?? {};

function resourceReply(resource: Record<string, unknown>, projection: Projection | undefined) {
  const meta = resource.meta as { version?: string; location?: string } | undefined;
  return {
    resource: struct(project(resource, projection)),
    etag: meta?.version ?? '',
    location: meta?.location ?? '',
  };
}

function listReply(page: ListPage, projection: Projection | undefined) {
  return {
    body: struct({
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

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

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
  async function enterpriseTeam(ctx: CallContext): Promise<string> {
    const teamId = teamOf(ctx);
    const { rows } = await db.query<{ plan: string }>('SELECT plan FROM teams WHERE id = $1', [teamId]);
    if (rows[0]?.plan !== 'enterprise') {
      throw new ScimError(403, undefined, 'SCIM provisioning requires the Enterprise plan.');
    }
    return teamId;
  }

  const listInput = (r: scim.ScimListRequest) => ({
    filter: r.filter || undefined,
    startIndex: r.startIndex || undefined,
    count: r.count < 0 ? undefined : r.count,
  });

  return {
    createUser: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await users.createUser(await enterpriseTeam(ctx), json(r.body), r.baseUrl),
          projectionOf(r.projection),
        ),
      ),
    getUser: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await users.getUser(await enterpriseTeam(ctx), r.id, r.baseUrl),
          projectionOf(r.projection),
        ),
      ),
    listUsers: (r, ctx) =>
      scimCall(async () =>
        listReply(
          await users.listUsers(await enterpriseTeam(ctx), listInput(r), r.baseUrl),
          projectionOf(r.projection),
        ),
      ),
    replaceUser: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await users.replaceUser(
            await enterpriseTeam(ctx),
            r.id,
            json(r.body),
            r.baseUrl,
            r.ifMatch || undefined,
          ),
          projectionOf(r.projection),
        ),
      ),
    patchUser: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await users.patchUser(
            await enterpriseTeam(ctx),
            r.id,
            json(r.body),
            r.baseUrl,
            r.ifMatch || undefined,
          ),
          projectionOf(r.projection),
        ),
      ),
    deleteUser: (r, ctx) => scimCall(async () => users.deleteUser(await enterpriseTeam(ctx), r.id)),
    createGroup: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await groups.createGroup(await enterpriseTeam(ctx), json(r.body), r.baseUrl),
          projectionOf(r.projection),
        ),
      ),
    getGroup: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await groups.getGroup(await enterpriseTeam(ctx), r.id, r.baseUrl),
          projectionOf(r.projection),
        ),
      ),
    listGroups: (r, ctx) =>
      scimCall(async () =>
        listReply(
          await groups.listGroups(await enterpriseTeam(ctx), listInput(r), r.baseUrl),
          projectionOf(r.projection),
        ),
      ),
    replaceGroup: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await groups.replaceGroup(
            await enterpriseTeam(ctx),
            r.id,
            json(r.body),
            r.baseUrl,
            r.ifMatch || undefined,
          ),
          projectionOf(r.projection),
        ),
      ),
    patchGroup: (r, ctx) =>
      scimCall(async () =>
        resourceReply(
          await groups.patchGroup(
            await enterpriseTeam(ctx),
            r.id,
            json(r.body),
            r.baseUrl,
            r.ifMatch || undefined,
          ),
          projectionOf(r.projection),
        ),
      ),
    deleteGroup: (r, ctx) =>
      scimCall(async () => {
        await groups.deleteGroup(await enterpriseTeam(ctx), r.id);
        return {};
      }),
    discover: (r, ctx) =>
      scimCall(async () => {
        await enterpriseTeam(ctx);
        return {
          resource: struct(discover(r.endpoint, r.id, r.baseUrl) as Record<string, unknown>),
          etag: '',
          location: '',
        };
      }),
  };
}

export { etagOf };
