import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/** A JSON Schema object as the OpenAPI 3.1 document writes it (only the keywords read here are typed). */
export type Schema = Record<string, unknown>;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: Schema;
}

/** One operation of the served document, its `$ref`s to parameters and responses resolved. */
export interface Operation {
  id: string;
  method: string;
  /** The path template, e.g. `/v1/guard/projects/{id}`. */
  path: string;
  /** Which error body applies: the spec's envelope on /v1 (and the probes), SCIM's under /scim/v2. */
  api: 'v1' | 'scim';
  secured: boolean;
  parameters: Parameter[];
  body?: { required: boolean; content: Record<string, Schema> };
  /** Status key (`200`, `4XX`, `default`) → JSON pointer of the response object in the document. */
  responses: Record<string, string>;
}

const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const escapePointer = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');

/** Reads `#/a/b` in the document. */
export function atPointer(document: Schema, pointer: string): unknown {
  return pointer
    .replace(/^#\/?/, '')
    .split('/')
    .filter((part) => part !== '')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], document);
}

/** Follows `$ref` chains of parameters and responses; returns the target and its pointer. */
function follow(document: Schema, node: unknown, pointer: string): { node: Schema; pointer: string } {
  let current = node as Schema;
  let at = pointer;
  for (let hops = 0; typeof current?.$ref === 'string' && hops < 10; hops += 1) {
    at = current.$ref as string;
    current = atPointer(document, at) as Schema;
  }
  return { node: current, pointer: at };
}

/** Every operation of the document, in document order. */
export function operationsOf(document: Schema): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Schema>)) {
    const shared = (item.parameters ?? []) as unknown[];
    for (const method of methods) {
      const raw = item[method] as Schema | undefined;
      if (!raw) continue;
      const pointer = `#/paths/${escapePointer(path)}/${method}`;
      const byKey = new Map<string, Parameter>();
      for (const parameter of [...shared, ...((raw.parameters ?? []) as unknown[])]) {
        const { node } = follow(document, parameter, '');
        byKey.set(`${node.in as string}:${node.name as string}`, {
          name: node.name as string,
          in: node.in as Parameter['in'],
          required: node.required === true,
          schema: (node.schema ?? {}) as Schema,
        });
      }
      let body: Operation['body'];
      if (raw.requestBody) {
        const { node } = follow(document, raw.requestBody, '');
        const content = (node.content ?? {}) as Record<string, Schema>;
        body = {
          required: node.required === true,
          content: Object.fromEntries(
            Object.entries(content).map(([type, media]) => [type, (media.schema ?? {}) as Schema]),
          ),
        };
      }
      const responses: Record<string, string> = {};
      for (const [status, response] of Object.entries((raw.responses ?? {}) as Record<string, unknown>)) {
        responses[status] = follow(
          document,
          response,
          `${pointer}/responses/${escapePointer(status)}`,
        ).pointer;
      }
      const security = (raw.security ?? document.security ?? []) as unknown[];
      operations.push({
        id: (raw.operationId as string | undefined) ?? `${method} ${path}`,
        method: method.toUpperCase(),
        path,
        api: path.startsWith('/scim/') ? 'scim' : 'v1',
        secured: security.length > 0,
        parameters: [...byKey.values()],
        body,
        responses,
      });
    }
  }
  return operations;
}

/** The response object documented for a status: the exact code, then its class (`4XX`), then `default`. */
export function documentedResponse(operation: Operation, status: number): string | undefined {
  return (
    operation.responses[String(status)] ??
    operation.responses[`${String(status)[0]}XX`] ??
    operation.responses[`${String(status)[0]}xx`] ??
    operation.responses.default
  );
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const stackTrace = /\n\s+at \S|node_modules\/|\.(?:ts|js):\d+:\d+/;
const scimErrorUrn = 'urn:ietf:params:scim:api:messages:2.0:Error';

/**
 * Checks answers against the served document: documented status, documented media type, body valid
 * against the documented schema, the API's error body, an X-Request-Id, no stack trace. One validator
 * per response schema, compiled on first use.
 */
export function contractChecker(document: Schema) {
  // strict: false because the document carries OpenAPI keywords (example, x-…) beside JSON Schema ones.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(document, 'openapi');
  const validators = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string) => {
    let validate = validators.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi${pointer}` });
      validators.set(pointer, validate);
    }
    return validate;
  };

  /** Every way the answer breaks the contract; empty when it keeps it. */
  return function problemsOf(operation: Operation, answer: Answer): string[] {
    const problems: string[] = [];
    const { status } = answer;
    if (status >= 500) problems.push(`answered ${status}`);
    if (!answer.headers['x-request-id']) problems.push('no X-Request-Id header');
    const text = answer.body.toString('utf8');
    // A script served as a file (Redoc's bundle for /v1/docs) is code: its text is not a leaked trace.
    const script = /^(?:text|application)\/javascript\b/i.test(String(answer.headers['content-type'] ?? ''));
    if (!script && stackTrace.test(text)) problems.push('the body shows a stack trace or a source path');

    const responsePointer = documentedResponse(operation, status);
    if (!responsePointer) {
      problems.push(`status ${status} is not documented for ${operation.id}`);
    } else {
      const response = atPointer(document, responsePointer) as Schema;
      const content = response.content as Record<string, Schema> | undefined;
      const mediaType = String(answer.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      if (!content || Object.keys(content).length === 0) {
        if (answer.body.length > 0)
          problems.push(`status ${status} is documented without a body, but one came`);
      } else if (!(mediaType in content)) {
        problems.push(
          `media type '${mediaType}' is not documented for ${status} (documented: ${Object.keys(content).join(', ')})`,
        );
      } else if (content[mediaType]!.schema) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          problems.push(`the ${status} body is not JSON`);
        }
        if (parsed !== undefined) {
          const validate = validatorAt(`${responsePointer}/content/${escapePointer(mediaType)}/schema`);
          if (!validate(parsed)) {
            const errors = (validate.errors ?? [])
              .slice(0, 5)
              .map(
                (e) =>
                  `${e.instancePath || '/'} ${e.message ?? ''}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`,
              );
            problems.push(`the ${status} body does not match its documented schema: ${errors.join('; ')}`);
          }
        }
      }
    }

    // The error bodies are checked on their own too, so a loosely documented error still has to be one.
    if (status >= 400) {
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        parsed = undefined;
      }
      if (operation.api === 'scim') {
        const schemas = parsed?.schemas;
        if (!Array.isArray(schemas) || !schemas.includes(scimErrorUrn) || parsed?.status !== String(status)) {
          problems.push(`the ${status} body is not a SCIM error with status "${status}"`);
        }
      } else {
        const error = parsed?.error as Record<string, unknown> | undefined;
        if (
          typeof error?.code !== 'string' ||
          typeof error.message !== 'string' ||
          !Array.isArray(error.details)
        ) {
          problems.push(`the ${status} body is not the error envelope`);
        }
      }
    }
    return problems;
  };
}
