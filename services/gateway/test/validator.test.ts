import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@costgov/log';
import { errorHandler } from '../src/http/errors';
import { requestValidators } from '../src/openapi/validator';

/** A document of one list and one create, shaped as the served one: $refs to shared parameters and schemas. */
const document = {
  openapi: '3.1.0',
  paths: {
    '/things': {
      get: {
        operationId: 'listThings',
        parameters: [
          { name: 'colour', in: 'query', schema: { type: 'string', minLength: 1 } },
          { name: 'fields', in: 'query', allowEmptyValue: true, schema: { type: 'string' } },
          { name: 'ratio', in: 'query', schema: { type: 'number', minimum: 0 } },
          { name: 'exact', in: 'query', schema: { type: 'boolean' } },
          { $ref: '#/components/parameters/Page' },
        ],
      },
      post: {
        operationId: 'createThing',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ThingCreate' } } },
        },
      },
    },
  },
  components: {
    parameters: {
      Page: { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 2147483647 } },
    },
    schemas: {
      ThingCreate: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 3 },
          rules: {
            oneOf: [
              {
                type: 'object',
                additionalProperties: false,
                properties: { approvers: { type: 'array', items: { type: 'string' } } },
              },
              { type: 'null' },
            ],
          },
        },
      },
    },
  },
};

let server: Server;
let base = '';

beforeAll(async () => {
  const validate = requestValidators(document);
  const app = express();
  app.set('query parser', 'simple');
  app.use(express.json());
  app.get('/things', validate('listThings'), (_req, res) => void res.json({ ok: true }));
  app.post('/things', validate('createThing'), (_req, res) => void res.status(201).json({ ok: true }));
  app.use(errorHandler(createLogger('test', 'silent')));
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function get(query: string) {
  const response = await fetch(`${base}/things?${query}`);
  return { status: response.status, body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function post(body: string, contentType = 'application/json') {
  const response = await fetch(`${base}/things`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
  });
  return { status: response.status, body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('the precompiled request validator', () => {
  it('fails at start for an operation the document lacks', () => {
    expect(() => requestValidators(document)('deleteThing')).toThrow(/no operation 'deleteThing'/);
  });

  it.each([
    ['page=1', 200],
    ['page=2147483647', 200],
    ['page=0', 400],
    ['page=2147483648', 400],
    ['page=0x10', 400],
    ['page=1e3', 400],
    ['page=Infinity', 400],
    ['page=1.0', 400],
    ['page=%2B1', 400],
    ['page=01', 400],
    ['page=99999999999999999999', 400],
    ['page=', 400],
    ['page=1&page=2', 400],
    ['ratio=0.5', 200],
    ['ratio=.5', 400],
    ['ratio=1e-3', 400],
    ['ratio=NaN', 400],
    ['exact=true', 200],
    ['exact=1', 400],
    ['colour=red', 200],
    ['colour=', 400],
    ['fields=', 200],
    ['shape=round', 400],
    // Unknown like any other, though named like what reaches a prototype.
    ['__proto__=x', 400],
    ['__proto__[polluted]=x', 400],
    ['constructor=x', 400],
    ['prototype=x', 400],
    ['__proto__=x&colour=red', 400],
  ])('%s → %i', async (query, status) => {
    const reply = await get(query);
    expect(reply.status).toBe(status);
    if (status === 400) {
      expect(reply.body.error.code).toBe('bad_request');
      const field = query.split('=')[0];
      expect(reply.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(reply.body.error.message).toContain(`'${field}'`);
    }
  });

  it.each([
    ['a valid body', '{"name":"abc"}', 201, undefined],
    ['rules null', '{"name":"abc","rules":null}', 201, undefined],
    ['a missing name', '{}', 422, ['name']],
    ['an unknown field', '{"name":"a","colour":"red"}', 422, ['colour']],
    ['a number for a string, not coerced', '{"name":1}', 422, ['name']],
    [
      'a nested wrong type, one detail',
      '{"name":"a","rules":{"approvers":[1]}}',
      422,
      ['rules.approvers[0]'],
    ],
    ['an array body', '[]', 422, ['body']],
  ])('%s', async (_case, body, status, fields) => {
    const reply = await post(body);
    expect(reply.status).toBe(status);
    if (fields) {
      expect(reply.body.error.code).toBe('validation_error');
      expect(reply.body.error.details.map((d: { field: string }) => d.field)).toEqual(fields);
    }
  });

  it('counts lengths in characters: three emoji fit a maximum of 3', async () => {
    expect((await post(JSON.stringify({ name: '😀😀😀' }))).status).toBe(201);
    expect((await post(JSON.stringify({ name: '😀😀😀😀' }))).status).toBe(422);
  });

  it.each([
    ['application/xml', 'application/xml'],
    ['text/plain', 'text/plain'],
  ])('answers 415 to a body with %s', async (_case, type) => {
    const reply = await post('{"name":"a"}', type);
    expect(reply.status).toBe(415);
    expect(reply.body.error).toMatchObject({ code: 'bad_request', details: [{ field: 'Content-Type' }] });
  });

  it('reads an empty JSON body as {} (as body-parser does) and names what is missing', async () => {
    const reply = await post('');
    expect(reply.status).toBe(422);
    expect(reply.body.error.details).toEqual([{ field: 'name', message: 'is required' }]);
  });
});
