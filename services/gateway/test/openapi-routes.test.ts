import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express, { Router } from 'express';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { freePort } from '@costgov/testing';
import { createGatewayApp, type GatewayDeps } from '../src/app';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { operationsOf, routesOf, type RouteOperation } from './routes-of';
import { deadBackends } from './dead-backends';

type Document = Record<string, unknown> & { paths: Record<string, Record<string, unknown>> };

const key = ({ method, path }: RouteOperation) => `${method} ${path}`;
const keys = (operations: RouteOperation[]) => [...new Set(operations.map(key))].sort();

let app: ReturnType<typeof createGatewayApp>;
let server: Server;
let served: Document;

beforeAll(async () => {
  // Nothing is called: the backends only have to exist for the app to be built.
  const deadPort = await freePort();
  const deps: GatewayDeps = {
    logger: createLogger('test', 'silent'),
    openapi: loadOpenApiDocument(),
    auth: authenticator({ identityClient: {} as never, maxTtlMs: 0 }),
    limiter: createMemoryLimiter(),
    ...deadBackends(deadPort),
    backendsReady: async () => ({}),
    draining: () => false,
  };
  app = createGatewayApp(deps);
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/openapi.json`);
  served = (await response.json()) as Document;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('routesOf reads an express app', () => {
  it('lists routes of the app and of nested routers with OpenAPI templates, and skips middleware', () => {
    const inner = Router();
    inner.get('/', () => undefined);
    inner.patch('/:id', () => undefined);
    const outer = Router();
    outer.use('/things', inner);
    const probe = express();
    probe.use((_req, _res, next) => next());
    probe.get('/healthz', () => undefined);
    probe.use('/v1', outer);
    expect(keys(routesOf(probe))).toEqual(['GET /healthz', 'GET /v1/things', 'PATCH /v1/things/{id}']);
  });

  it('refuses what it cannot read rather than overlooking it', () => {
    const anyMethod = Router();
    anyMethod.all('/x', () => undefined);
    const everyMethod = express();
    everyMethod.use('/v1', anyMethod);
    expect(() => routesOf(everyMethod)).toThrow(/every method/);
    const byRegExp = express();
    byRegExp.use(/^\/v\d+/, Router());
    expect(() => routesOf(byRegExp)).toThrow(/not a string/);
  });
});

describe('the served OpenAPI document and the gateway routes', () => {
  it('list the same operations, in both directions', () => {
    const routed = keys(routesOf(app));
    const documented = keys(operationsOf(served));
    // Guards against a vacuous pass if introspection ever found nothing.
    expect(routed).toContain('GET /v1/guard/projects/{id}');
    expect(routed).toContain('DELETE /scim/v2/Users/{id}');
    expect({
      routedButNotDocumented: routed.filter((op) => !documented.includes(op)),
      documentedButNotRouted: documented.filter((op) => !routed.includes(op)),
    }).toEqual({ routedButNotDocumented: [], documentedButNotRouted: [] });
  });

  it('is the document file, as parsed', () => {
    expect(served).toEqual(loadOpenApiDocument());
  });
});

describe('the OpenAPI document (lint)', () => {
  it('has no $ref that points nowhere', () => {
    const dangling: string[] = [];
    walk(served, (node) => {
      const ref = node.$ref;
      if (typeof ref !== 'string') return;
      if (!ref.startsWith('#/') || resolvePointer(served, ref) === undefined) dangling.push(ref);
    });
    expect(dangling).toEqual([]);
  });

  it('has unique operationIds and only declared tags', () => {
    const operations = Object.values(served.paths).flatMap((item) =>
      Object.entries(item)
        .filter(([method]) => method !== 'parameters')
        .map(([, op]) => op as { operationId?: string; tags?: string[] }),
    );
    const ids = operations.map((op) => op.operationId);
    expect(ids.filter((id, i) => !id || ids.indexOf(id) !== i)).toEqual([]);
    const declared = (served.tags as Array<{ name: string }>).map((tag) => tag.name);
    const used = new Set(operations.flatMap((op) => op.tags ?? []));
    expect([...used].filter((tag) => !declared.includes(tag))).toEqual([]);
    expect(declared.filter((tag) => !used.has(tag))).toEqual([]);
  });

  it('has only schemas that compile as JSON Schema 2020-12 in strict mode (no stray keys)', () => {
    // A YAML slip such as an unquoted comma in a flow mapping turns text into a key: strict mode refuses
    // any keyword it does not know, so such a key fails here.
    const defs: Record<string, unknown> = {};
    const components = (served.components as { schemas?: Record<string, unknown> }).schemas ?? {};
    for (const [name, schema] of Object.entries(components)) defs[name] = schema;
    let inline = 0;
    walk(served.paths, (node) => {
      if (node.schema && typeof node.schema === 'object') defs[`inline${inline++}`] = node.schema;
    });
    const root = JSON.parse(
      JSON.stringify({ $id: 'https://costgov.invalid/openapi', $defs: defs }).replaceAll(
        '"#/components/schemas/',
        '"#/$defs/',
      ),
    ) as object;
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    // Keywords OpenAPI 3.1 adds to JSON Schema.
    ajv.addKeyword('example').addKeyword('discriminator').addKeyword('xml').addKeyword('externalDocs');
    ajv.addSchema(root);
    for (const name of Object.keys(defs)) {
      expect(() => ajv.getSchema(`https://costgov.invalid/openapi#/$defs/${name}`), name).not.toThrow();
    }
  });
});

function walk(node: unknown, visit: (node: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) node.forEach((item) => walk(item, visit));
  else if (node && typeof node === 'object') {
    visit(node as Record<string, unknown>);
    Object.values(node).forEach((value) => walk(value, visit));
  }
}

function resolvePointer(document: unknown, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>(
      (node, part) =>
        node && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined,
      document,
    );
}
