import { Router, type Request, type Response } from 'express';
import type { scim } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, RpcClient } from '@costgov/rpc';
import { scimMediaType } from '../http/envelope';

type ScimClient = RpcClient<typeof scim.ScimService>;

const forbiddenKeys = new Set(['__proto__', 'constructor', 'prototype']);

const scimError = (detail: string, scimType: string) =>
  new BadRequestError(detail, [], { scimType, status: '400' });

/** Refuses keys that could reach an object's prototype anywhere in a body, before it goes further. */
function checkKeys(value: unknown, path = 'body'): void {
  if (Array.isArray(value)) value.forEach((item, i) => checkKeys(item, `${path}[${i}]`));
  else if (value && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      if (forbiddenKeys.has(key.toLowerCase()))
        throw scimError(`'${key}' is not allowed as an attribute name (${path}).`, 'invalidValue');
      checkKeys((value as Record<string, unknown>)[key], `${path}.${key}`);
    }
  }
}

function bodyOf(req: Request): Uint8Array {
  const body: unknown = req.body;
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw scimError(
      'The body must be a JSON object (Content-Type application/scim+json or application/json).',
      'invalidSyntax',
    );
  }
  checkKeys(body);
  return Buffer.from(JSON.stringify(body));
}

const list = (value: unknown) =>
  typeof value === 'string' && value.trim()
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];

function projectionOf(req: Request) {
  return { attributes: list(req.query.attributes), excludedAttributes: list(req.query.excludedAttributes) };
}

function integerParam(req: Request, name: string, missing: number): number {
  const raw = req.query[name];
  if (raw === undefined || raw === '') return missing;
  if (typeof raw !== 'string' || !/^-?\d{1,9}$/.test(raw))
    throw scimError(`'${name}' must be an integer.`, 'invalidValue');
  return Number(raw);
}

/** The SCIM base URL as the client sees it, for meta.location and Location. */
const baseUrlOf = (req: Request, publicBaseUrl?: string) =>
  publicBaseUrl
    ? `${publicBaseUrl.replace(/\/$/, '')}/scim/v2`
    : `${req.protocol}://${req.get('host')}/scim/v2`;

const context = (req: Request): CallContext => ({ teamId: req.principal.teamId, requestId: req.requestId });

function sendResource(res: Response, status: number, reply: scim.ScimResource): void {
  if (reply.etag) res.setHeader('ETag', reply.etag);
  if (status === 201 && reply.location) res.setHeader('Location', reply.location);
  res.status(status).type(scimMediaType).send(Buffer.from(reply.resourceJson));
}

/**
 * If-None-Match (RFC 9110 §13.1.2, weak comparison): true when the client already holds `etag`, so a GET
 * answers 304 without a body.
 */
function holdsCurrent(req: Request, etag: string): boolean {
  const header = req.get('if-none-match');
  if (!header || !etag) return false;
  if (header.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/**
 * /scim/v2 → identity's ScimService. SCIM documents are parsed and validated by identity, which owns
 * them; the gateway adds the transport: media type, Location, ETag, If-Match, query parameters.
 */
export function scimRoutes(client: ScimClient, options: { publicBaseUrl?: string } = {}): Router {
  const router = Router();
  const base = (req: Request) => baseUrlOf(req, options.publicBaseUrl);

  for (const [path, kind] of [
    ['/Users', 'User'],
    ['/Groups', 'Group'],
  ] as const) {
    router.get(path, async (req, res) => {
      const filter = typeof req.query.filter === 'string' ? req.query.filter : '';
      const request = {
        filter,
        startIndex: integerParam(req, 'startIndex', 0),
        count: integerParam(req, 'count', -1),
        baseUrl: base(req),
        projection: projectionOf(req),
      };
      const reply =
        kind === 'User'
          ? await client.listUsers(request, context(req))
          : await client.listGroups(request, context(req));
      res.status(200).type(scimMediaType).send(Buffer.from(reply.bodyJson));
    });
    router.post(path, async (req, res) => {
      const request = { bodyJson: bodyOf(req), baseUrl: base(req), projection: projectionOf(req) };
      sendResource(
        res,
        201,
        kind === 'User'
          ? await client.createUser(request, context(req))
          : await client.createGroup(request, context(req)),
      );
    });
    router.get(`${path}/:id`, async (req, res) => {
      const request = { id: String(req.params.id), baseUrl: base(req), projection: projectionOf(req) };
      const reply =
        kind === 'User'
          ? await client.getUser(request, context(req))
          : await client.getGroup(request, context(req));
      if (holdsCurrent(req, reply.etag)) {
        res.setHeader('ETag', reply.etag);
        res.status(304).end();
        return;
      }
      sendResource(res, 200, reply);
    });
    for (const method of ['put', 'patch'] as const) {
      router[method](`${path}/:id`, async (req, res) => {
        const request = {
          id: String(req.params.id),
          bodyJson: bodyOf(req),
          baseUrl: base(req),
          projection: projectionOf(req),
          ifMatch: req.get('if-match') ?? '',
        };
        const call =
          kind === 'User'
            ? method === 'put'
              ? client.replaceUser
              : client.patchUser
            : method === 'put'
              ? client.replaceGroup
              : client.patchGroup;
        const reply = await call(request, context(req));
        // A group PATCH with an empty `attributes` asks for no body (what Entra expects): 204.
        if (kind === 'Group' && method === 'patch' && req.query.attributes === '') {
          if (reply.etag) res.setHeader('ETag', reply.etag);
          res.status(204).end();
          return;
        }
        sendResource(res, 200, reply);
      });
    }
    router.delete(`${path}/:id`, async (req, res) => {
      const request = { id: String(req.params.id), baseUrl: base(req) };
      if (kind === 'User') await client.deleteUser(request, context(req));
      else await client.deleteGroup(request, context(req));
      res.status(204).end();
    });
  }

  for (const endpoint of ['ServiceProviderConfig', 'Schemas', 'ResourceTypes'] as const) {
    const discover = async (req: Request, res: Response) => {
      const reply = await client.discover(
        { endpoint, id: String(req.params.id ?? ''), baseUrl: base(req) },
        context(req),
      );
      res.status(200).type(scimMediaType).send(Buffer.from(reply.resourceJson));
    };
    router.get(`/${endpoint}`, discover);
    if (endpoint !== 'ServiceProviderConfig') router.get(`/${endpoint}/:id`, discover);
  }
  return router;
}
