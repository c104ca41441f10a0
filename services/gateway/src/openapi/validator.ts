import type { Request, RequestHandler } from 'express';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { BadRequestError, ValidationError, type FieldViolation } from '@costgov/errors';
import { documentOperations, type DocumentOperation, type Parameter } from './operations';
import { dereference, type Schema } from './schemas';

declare module 'express-serve-static-core' {
  interface Request {
    /**
     * The request as its operation's validator accepted it: path parameters, query values coerced to the
     * document's types (only those sent), and the parsed body. Typed per operation by OperationInput.
     */
    input?: { path: Record<string, string>; query: Record<string, unknown>; body: unknown };
  }
}

/**
 * Request validation against the OpenAPI document, compiled once at start: per operation one ajv
 * validator for its query parameters, one for its path parameters and one for its body. Express's own
 * router has matched the route already, so nothing is matched or compiled per request.
 *
 * Query values arrive as strings and are coerced only where the document says integer or number, and
 * only from their canonical decimal form (`0x10`, `1e3`, `Infinity`, `+1`, `007` and integers beyond
 * 2^53 are refused, not read as something else). A parameter the operation does not document, one given
 * twice, or an empty value (unless the parameter says `allowEmptyValue`) is 400. Bodies are not coerced.
 * What passes is kept on the request (`req.input`), so that no handler reads or parses a value again.
 */

type Coerce = (raw: string) => unknown;

interface QueryParameter {
  coerce: Coerce;
  allowEmpty: boolean;
}

const documentId = 'openapi';
const maxViolations = 20;

/** `/approval_rules/approvers/0` → `approval_rules.approvers[0]`. */
export function fieldOf(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), '');
}

const pointerOf = (...parts: string[]) =>
  `${documentId}#/${parts.map((p) => encodeURIComponent(p.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/')}`;

/** One violation per problem a person would fix: the noise of `oneOf` branches is left out. */
function violationsOf(errors: ErrorObject[] | null | undefined, unknownField: string): FieldViolation[] {
  const all = errors ?? [];
  const out: FieldViolation[] = [];
  const seen = new Set<string>();
  for (const error of all) {
    const branchNoise =
      (error.keyword === 'oneOf' ||
        error.keyword === 'anyOf' ||
        (error.keyword === 'type' && error.params.type === 'null')) &&
      all.some(
        (other) =>
          other !== error &&
          other.keyword !== 'oneOf' &&
          other.keyword !== 'anyOf' &&
          !(other.keyword === 'type' && other.params.type === 'null') &&
          other.instancePath.startsWith(error.instancePath),
      );
    if (branchNoise) continue;
    let field = fieldOf(error.instancePath);
    let message = error.message ?? 'is invalid';
    if (error.keyword === 'additionalProperties') {
      field = fieldOf(`${error.instancePath}/${String(error.params.additionalProperty)}`);
      message = unknownField;
    } else if (error.keyword === 'required') {
      field = fieldOf(`${error.instancePath}/${String(error.params.missingProperty)}`);
      message = 'is required';
    }
    const key = `${field}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field: field || 'body', message });
    if (out.length >= maxViolations) break;
  }
  return out;
}

/** "'page' must be <= 100 (and 1 more problem)." */
function summaryOf(problems: FieldViolation[]): string {
  const [first] = problems;
  const more = problems.length - 1;
  return `'${first!.field}' ${first!.message}${more > 0 ? ` (and ${more} more problem${more > 1 ? 's' : ''})` : ''}.`;
}

const canonicalInteger = /^-?(?:0|[1-9]\d*)$/;
const canonicalNumber = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

/** A range as people write it, for the message of a value that is not a number at all. */
function rangeOf(schema: Schema): string {
  const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
  if (minimum !== undefined && maximum !== undefined) return ` from ${minimum} to ${maximum}`;
  if (minimum !== undefined) return ` of at least ${minimum}`;
  if (maximum !== undefined) return ` of at most ${maximum}`;
  return '';
}

class NotCoercible {
  constructor(readonly message: string) {}
}

function coercionOf(schema: Schema): Coerce {
  const type = schema.type;
  if (type === 'integer') {
    const message = `must be an integer${rangeOf(schema)}, in decimal digits`;
    return (raw) => {
      const value = Number(raw);
      return canonicalInteger.test(raw) && Number.isSafeInteger(value) ? value : new NotCoercible(message);
    };
  }
  if (type === 'number') {
    const message = `must be a number${rangeOf(schema)}, in decimal digits`;
    return (raw) => {
      const value = Number(raw);
      return canonicalNumber.test(raw) && Number.isFinite(value) ? value : new NotCoercible(message);
    };
  }
  if (type === 'boolean')
    return (raw) =>
      raw === 'true' ? true : raw === 'false' ? false : new NotCoercible('must be true or false');
  return (raw) => raw;
}

export interface RequestValidators {
  /** The validating middleware of a documented operation; a name the document lacks fails at start. */
  (operationId: string): RequestHandler;
}

/** The validators of the operations of `document` (an OpenAPI 3.1 document), each compiled once. */
export function requestValidators(document: Record<string, unknown>): RequestValidators {
  const ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    coerceTypes: false,
    useDefaults: false,
    validateSchema: false,
  });
  addFormats(ajv);
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
  ajv.addSchema(document, documentId);

  const operations = new Map<string, () => RequestHandler>();
  for (const operation of documentOperations(document).values())
    operations.set(operation.operationId, () => compileOperation(ajv, document, operation));

  // Compiled when a route asks for it, at start: only the operations served are compiled.
  return (operationId) => {
    const compile = operations.get(operationId);
    if (!compile) throw new Error(`The OpenAPI document has no operation '${operationId}'.`);
    return compile();
  };
}

function compileOperation(
  ajv: Ajv2020,
  document: Schema,
  { path: template, method, operation, parameters }: DocumentOperation,
): RequestHandler {
  const schemaOf = (parameter: Parameter) => parameter.schema ?? {};
  const objectSchema = (list: Parameter[], closed: boolean) => ({
    type: 'object',
    properties: Object.fromEntries(list.map((p) => [p.name, schemaOf(p)])),
    required: list.filter((p) => p.required).map((p) => p.name),
    additionalProperties: !closed,
  });
  const queryParameters = parameters.filter((p) => p.in === 'query');
  const query = new Map<string, QueryParameter>(
    queryParameters.map((p) => [
      p.name,
      { coerce: coercionOf(dereference(document, schemaOf(p))), allowEmpty: p.allowEmptyValue === true },
    ]),
  );
  // The parameters' schemas hold the document's own $refs: made absolute, they resolve inside it.
  const validateQuery = ajv.compile(rebased(objectSchema(queryParameters, true)));
  const pathParameters = parameters.filter((p) => p.in === 'path');
  const validatePath = ajv.compile(rebased(objectSchema(pathParameters, false)));

  const content = operation.requestBody?.content ?? {};
  const mediaTypes = Object.keys(content);
  const bodyRequired = operation.requestBody?.required === true;
  const bodyPointer = mediaTypes[0]
    ? pointerOf('paths', template, method, 'requestBody', 'content', mediaTypes[0], 'schema')
    : undefined;
  const validateBody = bodyPointer ? ajv.compile({ $ref: bodyPointer }) : undefined;
  const mustBe = `must be ${mediaTypes.join(' or ')}`;
  const unsupportedType = `Content-Type ${mustBe}.`;

  return (req, _res, next) => {
    const problems: FieldViolation[] = [];
    const raw = req.query as Record<string, string | string[]>;
    // Without a prototype, as the query parser's own object: on `{}`, `__proto__=x` would set the
    // prototype instead of a key, and the unknown parameter would pass unseen.
    const values: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (const name of Object.keys(raw)) {
      const value = raw[name]!;
      const rule = query.get(name);
      if (!rule) {
        values[name] = value; // reported by the schema as unknown
      } else if (typeof value !== 'string') {
        problems.push({ field: name, message: 'must be given once' });
      } else if (value === '' && !rule.allowEmpty) {
        problems.push({ field: name, message: 'must not be empty; leave the parameter out instead' });
      } else {
        const coerced = rule.coerce(value);
        if (coerced instanceof NotCoercible) problems.push({ field: name, message: coerced.message });
        else values[name] = coerced;
      }
    }
    if (problems.length === 0 && !validateQuery(values))
      problems.push(...violationsOf(validateQuery.errors, 'is not a parameter of this operation'));
    if (!validatePath(req.params)) problems.push(...violationsOf(validatePath.errors, 'is not a parameter'));
    if (problems.length > 0) throw new BadRequestError(summaryOf(problems), problems);

    if (validateBody) checkBody(req, validateBody);
    req.input = { path: req.params as Record<string, string>, query: values, body: req.body };
    next();
  };

  function checkBody(req: Request, validate: ValidateFunction): void {
    const contentType = req.headers['content-type'];
    const essence = contentType?.split(';', 1)[0]!.trim().toLowerCase();
    if (!essence || !mediaTypes.includes(essence)) {
      if (!bodyRequired && req.body === undefined && !contentType) return;
      throw new BadRequestError(unsupportedType, [{ field: 'Content-Type', message: mustBe }], {
        status: '415',
      });
    }
    if (req.body === undefined) {
      if (!bodyRequired) return;
      throw new BadRequestError('The body is empty; this operation needs a JSON body.');
    }
    if (!validate(req.body)) throw new ValidationError(violationsOf(validate.errors, 'is not a known field'));
  }
}

/** A schema built here that refers to the document: its $refs made absolute. */
function rebased<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(rebased) as T;
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string' && value.startsWith('#')
        ? `${documentId}${value}`
        : rebased(value),
    ]),
  ) as T;
}
