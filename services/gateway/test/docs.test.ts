import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { identity } from '@costgov/contracts';
import { UnauthenticatedError } from '@costgov/errors';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { freePort } from '@costgov/testing';
import { createGatewayApp } from '../src/app';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { deadBackends } from './dead-backends';

const goodKey = 'cg_live_gatewaydocstestkey00000000000000';

/** Accepts goodKey only, so a request without it shows whether a route needs a credential. */
const identityStandIn = {
  async authenticate({ credential }: { credential?: string }) {
    if (credential !== goodKey) throw new UnauthenticatedError();
    return create(identity.AuthenticateResponseSchema, {
      principal: {
        teamId: 'team_1',
        credentialId: 'key_1',
        kind: identity.CredentialKind.API_KEY,
        scopes: ['guard:read'],
        plan: 'team',
        limits: { requestsPerMinute: 120, concurrentRequests: 10 },
      },
      cacheTtlSeconds: 30,
    });
  },
};

let server: Server;
let base = '';

beforeAll(async () => {
  const app = createGatewayApp({
    logger: createLogger('test', 'silent'),
    openapi: loadOpenApiDocument(),
    auth: authenticator({ identityClient: identityStandIn as never, maxTtlMs: 30_000 }),
    limiter: createMemoryLimiter(),
    ...deadBackends(await freePort()),
    backendsReady: async () => ({}),
    draining: () => false,
  });
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The directives of a Content-Security-Policy header, by name. */
const directives = (policy: string) =>
  Object.fromEntries(
    policy.split(';').map((d) => {
      const [name, ...sources] = d.trim().split(/\s+/);
      return [name!, sources];
    }),
  );

describe('GET /v1/docs', () => {
  it('is an HTML page, without a credential, that points Redoc at the served document and script', async () => {
    const response = await fetch(`${base}/v1/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html\b/);
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const page = await response.text();
    const specUrl = page.match(/<redoc spec-url="([^"]+)"/)?.[1];
    const scripts = [...page.matchAll(/<script([^>]*)>/g)].map((m) => m[1]!.trim());
    expect(specUrl).toBe('/v1/openapi.json');
    expect(scripts).toEqual(['src="/v1/docs/redoc.standalone.js"']);
    expect(page).toContain(
      `<title>${(loadOpenApiDocument().info as { title: string }).title} reference</title>`,
    );
    // Nothing is loaded from another origin.
    expect(page).not.toMatch(/\b(?:https?:)?\/\/[a-z]/i);

    // What the page references is served, also without a credential.
    const document = await fetch(`${base}${specUrl}`);
    expect(document.status).toBe(200);
    expect(await document.json()).toEqual(loadOpenApiDocument());
  });

  it('is served under a Content-Security-Policy that allows only its own origin, no inline script', async () => {
    const response = await fetch(`${base}/v1/docs`);
    const policy = directives(response.headers.get('content-security-policy') ?? '');
    expect(policy['default-src']).toEqual(["'none'"]);
    expect(policy['script-src']).toEqual(["'self'"]);
    expect(policy['connect-src']).toEqual(["'self'"]);
    expect(policy['worker-src']).toEqual(['blob:']);
    expect(policy['frame-ancestors']).toEqual(["'none'"]);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it("serves Redoc's standalone script from the installed package as JavaScript, cacheable", async () => {
    const response = await fetch(`${base}/v1/docs/redoc.standalone.js`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/javascript\b/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=86400');
    const body = Buffer.from(await response.arrayBuffer());
    expect(body.equals(readFileSync(require.resolve('redoc/bundles/redoc.standalone.js')))).toBe(true);

    const lastModified = response.headers.get('last-modified')!;
    expect(lastModified).toBeTruthy();
    const again = await fetch(`${base}/v1/docs/redoc.standalone.js`, {
      // fetch adds Cache-Control: no-cache to a conditional request unless it names one itself.
      headers: { 'if-modified-since': lastModified, 'cache-control': 'max-age=0' },
    });
    expect(again.status).toBe(304);
    const ranged = await fetch(`${base}/v1/docs/redoc.standalone.js`, { headers: { range: 'bytes=0-9' } });
    expect(ranged.status).toBe(200);
    expect((await ranged.arrayBuffer()).byteLength).toBe(body.length);
  });

  it('leaves other paths under /v1/docs to the API: a credential, then 404 in the error envelope', async () => {
    expect((await fetch(`${base}/v1/docs/openapi.yaml`)).status).toBe(401);
    const response = await fetch(`${base}/v1/docs/openapi.yaml`, {
      headers: { authorization: `Bearer ${goodKey}` },
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await fetch(`${base}/v1/docs`, { method: 'POST' })).status).not.toBe(200);
  });
});
