import { Router, type Request, type RequestHandler } from 'express';
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  type DescService,
  type MessageInitShape,
} from '@bufbuild/protobuf';
import type { CallContext, RpcClient } from '@costgov/rpc';
import { callContext } from '../http/call-context';
import { sendData } from '../http/envelope';
import { documentOperations, successOf, type DocumentOperation } from '../openapi/operations';
import { resolveSchema, type Schema } from '../openapi/schemas';
import type { RequestValidators } from '../openapi/validator';
import type { OperationId, OperationInput } from './input';
import { requestReader, type AcceptedInput } from './request-reader';
import { responseWriters, type Renames, type Write } from './response-writer';

type UnaryName<S extends DescService> = {
  [K in keyof S['method']]: S['method'][K] extends DescMethodUnary ? K : never;
}[keyof S['method']] &
  string;

type InputOf<S extends DescService, M extends UnaryName<S>> =
  S['method'][M] extends DescMethodUnary<infer I> ? I : never;

/** How one operation of the document is answered: by which rpc, and what REST does not say by name. */
export type OperationEntry<S extends DescService, Id extends OperationId> = {
  [M in UnaryName<S>]: {
    rpc: M;
    /** Request fields the REST input does not carry under their own name (a flag for a `null`, say). */
    request?: (input: OperationInput<Id>) => MessageInitShape<InputOf<S, M>>;
    /** The caller acts: the request's `actor`, and the call's, is the OAuth token's user or the API key. */
    acting?: true;
  };
}[UnaryName<S>];

/** The operations one service answers, keyed by the document's operationId. */
export interface OperationTable {
  service: DescService;
  operations: Partial<
    Record<OperationId, { rpc: string; request?: (input: never) => object; acting?: true }>
  >;
  renames: Renames;
  call(rpc: string, request: object, ctx: CallContext): Promise<unknown>;
}

/**
 * A route file's table. The method, path, status and Location of each operation come from the OpenAPI
 * document, the request and answer messages from the rpc's descriptor; `renames` names the proto
 * fields whose REST name differs, per message type (`{ [typeName]: { proto_name: 'rest_name' } }`).
 */
export function operationTable<S extends DescService>(
  service: S,
  client: RpcClient<S>,
  operations: { [Id in OperationId]?: OperationEntry<S, Id> },
  renames: Renames = {},
): OperationTable {
  const methods = client as unknown as Record<string, (request: object, ctx: object) => Promise<unknown>>;
  return {
    service,
    operations: operations as OperationTable['operations'],
    renames,
    call: (rpc, request, ctx) => methods[rpc]!(request, ctx),
  };
}

/** Who acts: the SCIM user behind an OAuth token, else the API key. */
const actorOf = (req: Request): string =>
  (req.principal.kind === 'oauth' && req.principal.userId) || req.principal.credentialId;

/**
 * The router of every operation of `tables` under `base` (`/v1/guard`): each at the method and path the
 * document gives it, behind its validator. An operation the document lacks, or one in two tables, fails
 * at start, as does a field of the document that no proto field answers (see the reader and the writer).
 */
export function operationRouter(
  document: Schema,
  validate: RequestValidators,
  tables: OperationTable[],
  base: string,
): Router {
  const router = Router();
  const inDocument = documentOperations(document);
  const renames: Renames = Object.assign({}, ...tables.map((table) => table.renames));
  const writers = responseWriters(document, renames);
  const mounted = new Set<string>();
  for (const table of tables) {
    for (const [operationId, entry] of Object.entries(table.operations)) {
      const operation = inDocument.get(operationId);
      if (!operation) throw new Error(`The OpenAPI document has no operation '${operationId}'.`);
      if (mounted.has(operationId)) throw new Error(`Operation '${operationId}' is in two tables.`);
      if (!operation.path.startsWith(`${base}/`)) throw new Error(`${operation.path} is not under ${base}.`);
      mounted.add(operationId);
      const method = table.service.method[entry.rpc] as DescMethodUnary | undefined;
      if (method?.methodKind !== 'unary')
        throw new Error(`${table.service.typeName} has no unary rpc '${entry.rpc}' (${operationId}).`);
      const path = operation.path.slice(base.length).replace(/\{([^}]+)\}/g, ':$1');
      const handler = operationHandler(document, operation, method, entry, table, writers, renames);
      router[operation.method](path, validate(operationId), handler);
    }
  }
  return router;
}

function operationHandler(
  document: Schema,
  operation: DocumentOperation,
  method: DescMethodUnary,
  entry: OperationTable['operations'][OperationId] & object,
  table: OperationTable,
  writers: ReturnType<typeof responseWriters>,
  renames: Renames,
): RequestHandler {
  const readRequest = requestReader(document, operation, method.input, renames);
  const extra = entry.request as ((input: AcceptedInput) => object) | undefined;
  if (entry.acting && !method.input.fields.some((field) => field.name === 'actor'))
    throw new Error(
      `${method.input.typeName} has no field 'actor' for the acting operation ${operation.operationId}.`,
    );
  const { status, body, location } = successOf(document, operation);
  const answer = body ? answerWriter(document, body, method.output, writers) : undefined;
  const locationBase = location ? operation.path : undefined;
  if (locationBase && !inPaths(document, `${locationBase}/{id}`))
    throw new Error(`${operation.operationId} answers a Location, but ${locationBase}/{id} is no path.`);

  return async (req, res) => {
    const input = req.input!;
    const ctx = callContext(req);
    const request: Record<string, unknown> = readRequest(input);
    if (extra) Object.assign(request, extra(input));
    if (entry.acting) request.actor = ctx.actor = actorOf(req);
    const output = await table.call(entry.rpc, request, ctx);
    if (!answer) return void res.status(status).end();
    const { data, meta } = answer(output);
    if (locationBase) res.setHeader('Location', `${locationBase}/${(data as { id: string }).id}`);
    sendData(res, status, data, meta);
  };
}

const inPaths = (document: Schema, path: string) => Object.hasOwn((document.paths ?? {}) as object, path);

/**
 * The envelope of an answer: `data` is the output message, or, when the document says a list, the
 * message's one repeated message field (`projects` of ListProjectsResponse); `meta` is its `meta` field.
 */
function answerWriter(
  document: Schema,
  schema: Schema,
  output: DescMessage,
  writers: ReturnType<typeof responseWriters>,
): (message: unknown) => { data: unknown; meta?: Record<string, unknown> } {
  const envelope = new Map(resolveSchema(document, schema).properties);
  const dataSchema = envelope.get('data');
  const unknown = [...envelope.keys()].filter((key) => key !== 'data' && key !== 'meta');
  if (!dataSchema || unknown.length > 0)
    throw new Error(`The answer of ${output.typeName} is not the envelope { data, meta }.`);
  let writeData: Write;
  const items = resolveSchema(document, dataSchema).items;
  if (items) {
    const lists = output.fields.filter((field) => field.fieldKind === 'list' && field.listKind === 'message');
    const list = lists[0];
    if (lists.length !== 1 || list?.fieldKind !== 'list' || list.listKind !== 'message')
      throw new Error(`${output.typeName} answers a list, but has ${lists.length} repeated message fields.`);
    const writeItem = writers.of(items, list.message);
    writeData = (message) => ((message as Record<string, unknown[]>)[list.localName] ?? []).map(writeItem);
  } else {
    writeData = writers.of(dataSchema, output);
  }
  const metaSchema = envelope.get('meta');
  if (!metaSchema) return (message) => ({ data: writeData(message) });
  const metaField = output.fields.find((field) => field.name === 'meta');
  if (metaField?.fieldKind !== 'message') throw new Error(`${output.typeName} has no message field 'meta'.`);
  const writeMeta = writers.of(metaSchema, metaField.message);
  const noMeta = create(metaField.message);
  return (message) => ({
    data: writeData(message),
    meta: writeMeta((message as Record<string, unknown>).meta ?? noMeta) as Record<string, unknown>,
  });
}
