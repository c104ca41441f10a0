import { describe, expect, it } from 'vitest';
import { streamedUpload } from '../src/http/idempotency';
import { loadOpenApiDocument } from '../src/openapi/document';

interface Operation {
  operationId: string;
  parameters?: Array<{ $ref?: string }>;
  responses: Record<string, { $ref?: string; headers?: Record<string, { $ref?: string }> }>;
}
interface Document {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: { ErrorCode: { enum: string[] } } };
}

const document = loadOpenApiDocument() as unknown as Document;

/** Every POST of the Guard API: each one passes through the idempotency middleware. */
const guardPosts = Object.entries(document.paths)
  .filter(([path, item]) => path.startsWith('/v1/guard') && item.post)
  .map(([path, item]) => ({ path, op: item.post as Operation }));
/** The path as a request would have it, for the middleware's own test of which POSTs it skips. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, 'x_1');
const replaying = guardPosts.filter(({ path }) => !streamedUpload.test(concrete(path)));

describe('the OpenAPI document describes Idempotency-Key on every Guard POST', () => {
  it('has Guard POST operations to check', () => {
    expect(replaying.map(({ op }) => op.operationId)).toContain('createProject');
  });

  it.each(guardPosts.map(({ path, op }) => [op.operationId, path, op] as const))(
    '%s (%s) takes the IdempotencyKey header parameter',
    (_id, _path, op) => {
      expect(op.parameters?.map((p) => p.$ref)).toContain('#/components/parameters/IdempotencyKey');
    },
  );

  it.each(replaying.map(({ op }) => [op.operationId, op] as const))(
    '%s declares the replay header on success, and the 409 and 422 of the key',
    (_id, op) => {
      const successes = Object.entries(op.responses).filter(([status]) => /^2\d\d$/.test(status));
      expect(successes.length).toBeGreaterThan(0);
      for (const [status, response] of successes) {
        expect(response.headers?.['Idempotent-Replayed']?.$ref, status).toBe(
          '#/components/headers/Idempotent-Replayed',
        );
      }
      expect(op.responses['409']?.$ref).toBe('#/components/responses/ConflictOrKeyInUse');
      expect(op.responses['422']?.$ref).toBe('#/components/responses/ValidationFailedOrKeyReused');
    },
  );

  it('lists idempotency_key_reused among the error codes', () => {
    expect(document.components.schemas.ErrorCode.enum).toContain('idempotency_key_reused');
  });

  it('recognises the streamed upload, whose retries replace rather than replay', () => {
    expect(streamedUpload.test('/v1/guard/connections/con_1/cost-data')).toBe(true);
    expect(streamedUpload.test('/v1/guard/connections/con_1/cost-data?x=1')).toBe(true);
    expect(streamedUpload.test('/v1/guard/connections')).toBe(false);
    expect(streamedUpload.test('/v1/guard/connections/con_1/cost-data-other')).toBe(false);
  });
});
