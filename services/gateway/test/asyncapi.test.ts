import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { create, toJson } from '@bufbuild/protobuf';
import asyncApiSchema from '@asyncapi/specs/schemas/3.0.0.json';
import { catalogue, eventTypes } from '@costgov/events';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { freePort } from '@costgov/testing';
import { createGatewayApp } from '../src/app';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { deadBackends } from './dead-backends';

interface AsyncApi {
  asyncapi: string;
  channels: Record<string, { address: string; 'x-jetstream': { stream: string } }>;
  operations: Record<string, { action: string }>;
  components: { messages: Record<string, { payload: { $ref: string } }>; schemas: Record<string, unknown> };
}

let server: Server;
let reply: Response;
let served: AsyncApi;

beforeAll(async () => {
  const app = createGatewayApp({
    logger: createLogger('test', 'silent'),
    openapi: loadOpenApiDocument(),
    // An authenticator that would refuse any credential: the document needs none.
    auth: authenticator({ identityClient: {} as never, maxTtlMs: 0 }),
    limiter: createMemoryLimiter(),
    ...deadBackends(await freePort()),
    backendsReady: async () => ({}),
    draining: () => false,
  });
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  reply = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/asyncapi.json`);
  served = (await reply.clone().json()) as AsyncApi;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('GET /v1/asyncapi.json', () => {
  it('serves the AsyncAPI 3.0 document as JSON without a credential', () => {
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(served.asyncapi).toBe('3.0.0');
    expect(served.channels['budgets.budget.breached']).toMatchObject({
      address: '{namespace}.budgets.budget.breached',
      'x-jetstream': { stream: '{NAMESPACE}_BUDGETS' },
    });
    expect(served.operations['budgets.budget.breached']?.action).toBe('receive');
    expect(Object.keys(served.channels)).toEqual(eventTypes);
  });

  it('is valid against the AsyncAPI 3.0.0 JSON Schema', () => {
    // The AsyncAPI schema carries its own copy of the draft-07 meta-schema.
    const ajv = new Ajv({ strict: false, allErrors: true, meta: false, validateSchema: false });
    addFormats(ajv);
    const validate = ajv.compile(asyncApiSchema);
    expect(validate(served), JSON.stringify(validate.errors?.slice(0, 5), null, 2)).toBe(true);
    // A stray key in a channel is refused, so the check is not vacuous.
    const broken = structuredClone(served) as unknown as Record<string, Record<string, object>>;
    broken.channels!['budgets.budget.breached'] = {
      ...broken.channels!['budgets.budget.breached'],
      stray: 1,
    };
    expect(validate(broken)).toBe(false);
  });

  it('describes each payload as producers encode it (proto3 JSON, every non-optional field)', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'asyncapi', components: served.components });
    for (const type of eventTypes) {
      const { schema } = catalogue[type];
      const validate = ajv.getSchema(`asyncapi${served.components.messages[type]!.payload.$ref}`)!;
      // As libs/bus encodePayload writes it: implicit fields at their defaults are written too.
      const payload = toJson(schema, create(schema), { alwaysEmitImplicit: true });
      expect(validate(payload), `${type}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(validate({}), `${type} accepts an empty payload`).toBe(false);
    }
  });

  it("matches the OpenAPI document's table of event types", () => {
    const { info } = loadOpenApiDocument() as { info: { description: string } };
    const { description } = info;
    const section = description.slice(description.indexOf('## Events'), description.indexOf('## Limits'));
    const listed = [...section.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((match) => match[1]);
    expect(listed.sort()).toEqual([...eventTypes].sort());
  });
});
