import { describe, expect, it } from 'vitest';
import { create, type DescMessage } from '@bufbuild/protobuf';
import {
  budgets,
  costs,
  identity,
  notifier,
  scanner,
  StringListSchema,
  violations,
} from '@costgov/contracts';
import type { Schema } from '../openapi/schemas';
import { responseWriters, type Renames } from './response-writer';

const at = (iso: string, extraNanos = 0) => {
  const ms = Date.parse(iso);
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 + extraNanos };
};

/** A document of only the schemas a case refers to with `$ref`. */
const document: Schema = {
  components: {
    schemas: {
      ApprovalRules: {
        type: 'object',
        required: ['approvers'],
        properties: {
          require_approval_above: { type: ['number', 'null'] },
          approvers: { type: 'array', items: { type: 'string' } },
        },
      },
      Breakdown: {
        type: 'object',
        required: ['budget_compliance', 'tag_coverage', 'recommendation_adoption'],
        properties: {
          budget_compliance: { type: 'integer' },
          tag_coverage: { type: 'integer' },
          recommendation_adoption: { type: 'integer' },
        },
      },
      Threshold: {
        type: 'object',
        properties: { percentage: { type: 'number' }, notified_at: { type: ['string', 'null'] } },
      },
    },
  },
};

const object = (properties: Record<string, Schema>, required = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});

interface Case {
  name: string;
  message: DescMessage;
  value: Record<string, unknown>;
  schema: Schema;
  renames?: Renames;
  rest: unknown;
}

const cases: Case[] = [
  {
    name: 'timestamps: ISO 8601 with milliseconds (nanoseconds rounded), an unset one null',
    message: budgets.BudgetSchema,
    value: { createdAt: at('2026-11-27T08:00:00.123Z', 600_000), periodEnd: at('2026-12-01T00:00:00Z') },
    schema: object({
      created_at: { type: 'string' },
      period_end: { type: 'string' },
      evaluated_at: { type: ['string', 'null'] },
      updated_at: { type: 'string' },
    }),
    rest: {
      created_at: '2026-11-27T08:00:00.124Z',
      period_end: '2026-12-01T00:00:00.000Z',
      evaluated_at: null,
      updated_at: null,
    },
  },
  {
    name: 'optional fields: unset is null where the schema allows it, else left out, or the default when required',
    message: violations.ViolationSchema,
    value: { acknowledgedBy: 'key_1', acknowledgeNote: '' },
    schema: object(
      {
        acknowledged_by: { type: ['string', 'null'] },
        acknowledge_note: { type: ['string', 'null'] },
        resolved_by: { type: ['string', 'null'] },
        resolve_note: { type: 'string' },
      },
      ['acknowledged_by', 'acknowledge_note', 'resolved_by'],
    ),
    rest: { acknowledged_by: 'key_1', acknowledge_note: '', resolved_by: null },
  },
  {
    name: 'an optional field unset and required without null is its default',
    message: scanner.FindingSchema,
    value: {},
    schema: object({ estimated_monthly_savings: { type: 'number' }, suppression_reason: { type: 'string' } }),
    rest: { estimated_monthly_savings: 0, suppression_reason: '' },
  },
  {
    name: 'fields without presence: the zero value is null only where the schema allows null',
    message: notifier.DeliveryAttemptSchema,
    value: { attempt: 0, responseStatus: 0, responseExcerpt: '' },
    schema: object({
      attempt: { type: 'integer' },
      response_status: { type: ['integer', 'null'] },
      response_excerpt: { type: 'string' },
    }),
    rest: { attempt: 0, response_status: null, response_excerpt: '' },
  },
  {
    name: 'int64 as JSON numbers',
    message: costs.IngestSummarySchema,
    value: { rows: 1_000_000n, bytes: 9_007_199_254_740_991n, durationMs: 0n },
    schema: object({
      rows: { type: 'integer' },
      bytes: { type: 'integer' },
      duration_ms: { type: 'integer' },
    }),
    rest: { rows: 1_000_000, bytes: 9_007_199_254_740_991, duration_ms: 0 },
  },
  {
    name: 'nested messages: set, unset and nullable (null), unset and required (its fields at their defaults)',
    message: scanner.CostPostureSchema,
    value: { score: 90 },
    schema: object({ score: { type: 'integer' }, breakdown: { $ref: '#/components/schemas/Breakdown' } }),
    rest: { score: 90, breakdown: { budget_compliance: 0, tag_coverage: 0, recommendation_adoption: 0 } },
  },
  {
    name: 'a nested message behind oneOf [x, null], with its own optional field',
    message: budgets.ProjectSchema,
    value: { id: 'prj_1', approvalRules: { approvers: ['u1', 'u2'] } },
    schema: object({
      id: { type: 'string' },
      approval_rules: { oneOf: [{ $ref: '#/components/schemas/ApprovalRules' }, { type: 'null' }] },
    }),
    rest: { id: 'prj_1', approval_rules: { require_approval_above: null, approvers: ['u1', 'u2'] } },
  },
  {
    name: 'repeated scalars and repeated messages, each element in the items schema',
    message: budgets.BudgetSchema,
    value: { thresholds: [{ percentage: 50, notifiedAt: at('2026-11-02T10:00:00Z') }, { percentage: 80 }] },
    schema: object({ thresholds: { type: 'array', items: { $ref: '#/components/schemas/Threshold' } } }),
    rest: {
      thresholds: [
        { percentage: 50, notified_at: '2026-11-02T10:00:00.000Z' },
        { percentage: 80, notified_at: null },
      ],
    },
  },
  {
    name: 'maps as objects',
    message: budgets.BudgetSchema,
    value: { tags: { env: 'prod', team: 'payments' } },
    schema: object({ tags: { type: 'object', additionalProperties: { type: 'string' } } }),
    rest: { tags: { env: 'prod', team: 'payments' } },
  },
  {
    name: "enums: the value's name without the enum's prefix, in lower case",
    message: identity.PrincipalSchema,
    value: { kind: identity.CredentialKind.SCIM_TOKEN, scopes: ['guard:read'] },
    schema: object({
      kind: { type: 'string', enum: ['api_key', 'scim_token', 'oauth_token'] },
      scopes: { type: 'array', items: { type: 'string' } },
    }),
    rest: { kind: 'scim_token', scopes: ['guard:read'] },
  },
  {
    name: 'an enum at its zero value is null where the schema allows null',
    message: identity.PrincipalSchema,
    value: {},
    schema: object({
      kind: { type: ['string', 'null'], enum: ['api_key', 'scim_token', 'oauth_token', null] },
    }),
    rest: { kind: null },
  },
  {
    name: 'keys in the order of the schema, not of the field numbers; fields the schema lacks left out',
    message: budgets.BudgetSchema,
    value: { id: 'bdg_1', forecastSpend: 12.5, currentSpend: 10, name: 'monthly' },
    schema: object({
      current_spend: { type: 'number' },
      forecast_spend: { type: 'number' },
      id: { type: 'string' },
    }),
    rest: { current_spend: 10, forecast_spend: 12.5, id: 'bdg_1' },
  },
  {
    name: 'renames: a proto field under its REST name',
    message: notifier.DeliverySchema,
    value: { attempts: 2, attemptLog: [{ attempt: 1, latencyMs: 12n }] },
    schema: object({
      attempt_count: { type: 'integer' },
      attempts: {
        type: 'array',
        items: object({ attempt: { type: 'integer' }, latency_ms: { type: 'integer' } }),
      },
    }),
    renames: { 'costgov.notifier.v1.Delivery': { attempts: 'attempt_count', attempt_log: 'attempts' } },
    rest: { attempt_count: 2, attempts: [{ attempt: 1, latency_ms: 12 }] },
  },
  {
    name: 'allOf merged in order; a message field the schema does not name writes its fields beside the others',
    message: notifier.WebhookWithSecretSchema,
    value: { webhook: { id: 'whk_1', enabled: true }, secret: 'whsec_x' },
    schema: {
      allOf: [
        object({ id: { type: 'string' }, enabled: { type: 'boolean' } }),
        { properties: { secret: { type: 'string' } } },
      ],
    },
    rest: { id: 'whk_1', enabled: true, secret: 'whsec_x' },
  },
  {
    name: 'an embedded message unset: its fields at their defaults; an optional field unset and not required left out',
    message: notifier.WebhookWithSecretSchema,
    value: {},
    schema: {
      allOf: [
        object({ id: { type: 'string' }, enabled: { type: 'boolean' } }),
        { properties: { secret: { type: 'string' } } },
      ],
    },
    rest: { id: '', enabled: false },
  },
  {
    name: 'a wrapper message (one field `values`) is its value',
    message: budgets.UpdateProjectRequestSchema,
    value: { id: 'prj_1', connectionIds: create(StringListSchema, { values: ['con_1'] }) },
    schema: object({ id: { type: 'string' }, connection_ids: { type: 'array', items: { type: 'string' } } }),
    rest: { id: 'prj_1', connection_ids: ['con_1'] },
  },
  {
    name: 'oneof members: the chosen one written, the other unset (bytes as base64)',
    message: costs.UploadCostDataRequestSchema,
    value: { part: { case: 'chunk', value: new Uint8Array([104, 105]) } },
    schema: object(
      {
        start: { type: ['object', 'null'], properties: { connection_id: { type: 'string' } } },
        chunk: { type: 'string' },
      },
      [],
    ),
    rest: { start: null, chunk: 'aGk=' },
  },
];

describe('the REST writer of a protobuf-es message', () => {
  it.each(cases.map((c) => [c.name, c] as const))(
    '%s',
    (_name, { message, value, schema, renames, rest }) => {
      const write = responseWriters(document, renames).of(schema, message);
      const written = write(create(message, value as never));
      expect(written).toEqual(rest);
      // Key order is what clients see in the text (and what an idempotent replay repeats byte for byte).
      expect(JSON.stringify(written)).toBe(JSON.stringify(rest));
    },
  );

  it('compiles one writer per schema and message type', () => {
    const writers = responseWriters(document);
    const schema = object({ id: { type: 'string' } });
    expect(writers.of(schema, budgets.ProjectSchema)).toBe(writers.of(schema, budgets.ProjectSchema));
  });

  describe('refuses at start what it could not write', () => {
    it.each([
      [
        'a property without a field',
        budgets.ProjectSchema,
        object({ id: { type: 'string' }, owner: { type: 'string' } }),
        /'owner' of costgov\.budgets\.v1\.Project has no field of that name/,
      ],
      [
        'an enum value the document does not list',
        identity.PrincipalSchema,
        object({ kind: { type: 'string', enum: ['api_key', 'scim_token'] } }),
        /CREDENTIAL_KIND_OAUTH_TOKEN .* not in the document's enum/,
      ],
      [
        'a repeated field the document does not make an array',
        budgets.ProjectSchema,
        object({ connection_ids: { type: 'string' } }),
        /'connection_ids' of costgov\.budgets\.v1\.Project is not an array/,
      ],
    ])('%s', (_name, message, schema, error) => {
      expect(() => responseWriters(document).of(schema, message)).toThrow(error);
    });
  });
});
