import { describe, expect, it } from 'vitest';
import { create, toJson, type DescMessage } from '@bufbuild/protobuf';
import { budgets, costs, identity, notifier } from '@costgov/contracts';
import { documentOperations } from '../openapi/operations';
import type { Schema } from '../openapi/schemas';
import { requestReader, type AcceptedInput } from './request-reader';
import type { Renames } from './response-writer';

const string = { type: 'string' };
const query = (name: string, schema: Schema = string) => ({ name, in: 'query', schema });
const body = (properties: Record<string, Schema>) => ({
  requestBody: { content: { 'application/json': { schema: { type: 'object', properties } } } },
});

/** One operation per message read here; the reader only looks at parameters and the JSON body. */
const document: Schema = {
  paths: {
    '/projects': {
      get: {
        operationId: 'listProjects',
        parameters: [
          query('status'),
          query('connection_id'),
          query('page', { type: 'integer' }),
          query('per_page', { type: 'integer' }),
        ],
      },
    },
    '/projects/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true, schema: string }],
      patch: {
        operationId: 'updateProject',
        ...body({
          name: string,
          connection_ids: { type: 'array', items: string },
          approval_rules: {
            oneOf: [
              {
                type: 'object',
                properties: {
                  require_approval_above: { type: ['number', 'null'] },
                  approvers: { type: 'array', items: string },
                },
              },
              { type: 'null' },
            ],
          },
        }),
      },
    },
    '/budgets': { get: { operationId: 'listBudgets', parameters: [query('sort')] } },
    '/webhooks/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true, schema: string }],
      patch: {
        operationId: 'updateWebhook',
        ...body({
          events: { type: 'array', items: string },
          rotate_secret: { type: 'boolean' },
          previous_secret_ttl_seconds: { type: 'integer' },
        }),
      },
    },
    '/webhooks/{id}/deliveries': {
      get: {
        operationId: 'listWebhookDeliveries',
        parameters: [{ name: 'id', in: 'path', required: true, schema: string }, query('status')],
      },
    },
    '/spend': {
      post: {
        operationId: 'getSpend',
        ...body({ from: string, tags: { type: 'object', additionalProperties: string }, currency: string }),
      },
    },
    '/principals': {
      post: {
        operationId: 'createPrincipal',
        ...body({
          kind: string,
          limits: { type: 'object', properties: { requests_per_minute: { type: 'integer' } } },
        }),
      },
    },
  },
};
const operations = documentOperations(document);

interface Case {
  name: string;
  operationId: string;
  message: DescMessage;
  input: Partial<AcceptedInput>;
  renames?: Renames;
  /** The request as proto3 JSON (defaults left out), to compare what the service receives. */
  request: Record<string, unknown>;
}

const cases: Case[] = [
  {
    name: "query values under the fields' names; a message whose fields are all query parameters read from them",
    operationId: 'listProjects',
    message: budgets.ListProjectsRequestSchema,
    input: { query: { status: 'active', connection_id: 'con_1', page: 2, per_page: 10 } },
    request: { status: 'active', connectionId: 'con_1', page: { page: 2, perPage: 10 } },
  },
  {
    name: 'nothing sent, nothing set: the service applies its defaults',
    operationId: 'listProjects',
    message: budgets.ListProjectsRequestSchema,
    input: { query: {} },
    request: {},
  },
  {
    name: "a path parameter and a body; a bare list fills the wrapper message; a nested object's null leaves its field unset",
    operationId: 'updateProject',
    message: budgets.UpdateProjectRequestSchema,
    input: {
      path: { id: 'prj_1' },
      body: {
        name: 'n',
        connection_ids: [],
        approval_rules: { require_approval_above: null, approvers: ['u1'] },
      },
    },
    request: { id: 'prj_1', name: 'n', connectionIds: {}, approvalRules: { approvers: ['u1'] } },
  },
  {
    name: 'null leaves a message field unset (the table says what null means)',
    operationId: 'updateProject',
    message: budgets.UpdateProjectRequestSchema,
    input: { path: { id: 'prj_1' }, body: { approval_rules: null } },
    request: { id: 'prj_1' },
  },
  {
    name: '`-field` is a descending SortOrder',
    operationId: 'listBudgets',
    message: budgets.ListBudgetsRequestSchema,
    input: { query: { sort: '-amount' } },
    request: { sort: { field: 'amount', descending: true } },
  },
  {
    name: 'int64 from a JSON number; a boolean; an optional wrapper',
    operationId: 'updateWebhook',
    message: notifier.UpdateWebhookRequestSchema,
    input: {
      path: { id: 'whk_1' },
      body: { events: ['*'], rotate_secret: true, previous_secret_ttl_seconds: 0 },
    },
    request: { id: 'whk_1', events: { values: ['*'] }, rotateSecret: true, previousSecretTtlSeconds: '0' },
  },
  {
    name: "a renamed field: the path parameter `id` is the request's `webhook_id`",
    operationId: 'listWebhookDeliveries',
    message: notifier.ListDeliveriesRequestSchema,
    input: { path: { id: 'whk_1' }, query: { status: 'failed' } },
    renames: { 'costgov.notifier.v1.ListDeliveriesRequest': { webhook_id: 'id' } },
    request: { webhookId: 'whk_1', status: 'failed' },
  },
  {
    name: 'an ISO string is a Timestamp; a map stays a map',
    operationId: 'getSpend',
    message: costs.GetSpendRequestSchema,
    input: { body: { from: '2026-11-01T00:00:00.000Z', tags: { env: 'prod' }, currency: 'USD' } },
    request: { from: '2026-11-01T00:00:00Z', tags: { env: 'prod' }, currency: 'USD' },
  },
  {
    name: "an enum from its value's name in lower case; a nested message by its fields' names",
    operationId: 'createPrincipal',
    message: identity.PrincipalSchema,
    input: { body: { kind: 'oauth_token', limits: { requests_per_minute: 60 } } },
    request: { kind: 'CREDENTIAL_KIND_OAUTH_TOKEN', limits: { requestsPerMinute: 60 } },
  },
];

describe('the request message of an operation, from its validated input', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const read = requestReader(document, operations.get(c.operationId)!, c.message, c.renames ?? {});
    const init = read({ path: {}, query: {}, body: undefined, ...c.input });
    expect(toJson(c.message, create(c.message, init as never))).toEqual(c.request);
  });

  it.each([
    [
      'a body property',
      'getSpend',
      costs.GetDailySpendRequestSchema,
      /body property 'currency' .* no field in costgov\.costs\.v1\.GetDailySpendRequest/,
    ],
    [
      'a path parameter not renamed',
      'listWebhookDeliveries',
      notifier.ListDeliveriesRequestSchema,
      /path parameter 'id'/,
    ],
    [
      'a query parameter',
      'listProjects',
      budgets.ListBudgetsRequestSchema,
      /query parameter 'connection_id'/,
    ],
  ])('refuses at start %s of the document that no field takes', (_name, operationId, message, error) => {
    expect(() => requestReader(document, operations.get(operationId)!, message, {})).toThrow(error);
  });
});
