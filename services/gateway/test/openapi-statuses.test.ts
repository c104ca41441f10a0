import { describe, expect, it } from 'vitest';
import { loadOpenApiDocument } from '../src/openapi/document';

interface Operation {
  operationId: string;
  parameters?: Array<{ $ref?: string }>;
  responses: Record<string, { $ref?: string }>;
}
type Document = { paths: Record<string, Record<string, unknown>> };

const document = loadOpenApiDocument() as unknown as Document;
const methods = ['get', 'post', 'put', 'patch', 'delete'];

/** Operations behind the gateway's shared middleware: authentication, limits, body parser, text rule. */
function operationsUnder(prefix: string) {
  return Object.entries(document.paths)
    .filter(([path]) => path.startsWith(prefix))
    .flatMap(([path, item]) =>
      methods.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] as Operation })),
    );
}

/**
 * What any request to these operations can be answered before its handler runs: a path, query or body
 * the text rule or the JSON parser refuses (400), a credential (401/403), a slow, large or undecodable
 * body (408/413/415, on every method: a GET may carry a body too), limits (429), and a backend (500/503).
 */
const sharedStatuses = ['400', '401', '403', '408', '413', '415', '429', '500', '503'];

describe('the OpenAPI document declares every status the shared middleware can answer', () => {
  it.each(operationsUnder('/scim/v2').map((o) => [o.op.operationId, o] as const))(
    '%s declares them, each with the SCIM error body',
    (_id, { op }) => {
      for (const status of sharedStatuses) {
        expect(op.responses[status]?.$ref, `${op.operationId} ${status}`).toMatch(
          /^#\/components\/responses\/Scim/,
        );
      }
    },
  );

  it.each(operationsUnder('/v1/guard').map((o) => [o.op.operationId, o] as const))(
    '%s declares them and 422, each with the error envelope',
    (_id, { op }) => {
      // On /v1 the text rule refuses a string in any body (NUL, control characters) as validation_error.
      for (const status of [...sharedStatuses, '422']) {
        const ref = op.responses[status]?.$ref;
        expect(ref, `${op.operationId} ${status}`).toMatch(/^#\/components\/responses\//);
        expect(ref).not.toMatch(/\/Scim/);
      }
    },
  );

  it('SCIM writes that honour If-Match document it and its 412', () => {
    const writes = operationsUnder('/scim/v2').filter(({ method }) => ['put', 'patch'].includes(method));
    expect(writes.length).toBe(4);
    for (const { op } of writes) {
      expect(op.responses['412']?.$ref, op.operationId).toBe('#/components/responses/ScimPreconditionFailed');
      expect(
        op.parameters?.map((p) => p.$ref),
        op.operationId,
      ).toContain('#/components/parameters/ScimIfMatch');
    }
  });
});
