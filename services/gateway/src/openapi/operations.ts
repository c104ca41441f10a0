import { dereference, type Schema } from './schemas';

export interface Parameter {
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  required?: boolean;
  allowEmptyValue?: boolean;
  schema?: Schema;
}

interface Response {
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: Schema }>;
}

export interface Operation {
  operationId?: string;
  parameters?: Array<Parameter | { $ref: string }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, Response | { $ref: string }>;
}

/** One operation of the document, with the parameters of its path and its own, `$ref`s followed. */
export interface DocumentOperation {
  operationId: string;
  method: (typeof methods)[number];
  /** The path template, `/v1/guard/projects/{id}`. */
  path: string;
  operation: Operation;
  parameters: Parameter[];
}

const methods = ['get', 'put', 'post', 'patch', 'delete'] as const;

/** Every operation of an OpenAPI 3.1 document that has an operationId, by operationId. */
export function documentOperations(document: Schema): Map<string, DocumentOperation> {
  const operations = new Map<string, DocumentOperation>();
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Schema>)) {
    for (const method of methods) {
      const operation = item[method] as Operation | undefined;
      if (!operation?.operationId) continue;
      const parameters = [
        ...((item.parameters as Operation['parameters']) ?? []),
        ...(operation.parameters ?? []),
      ];
      operations.set(operation.operationId, {
        operationId: operation.operationId,
        method,
        path,
        operation,
        parameters: parameters.map((p) => dereference<Parameter>(document, p)),
      });
    }
  }
  return operations;
}

/** What an operation answers when it succeeds: its one 2xx status, JSON body schema and Location header. */
export interface SuccessResponse {
  status: number;
  body: Schema | undefined;
  location: boolean;
}

export function successOf(document: Schema, { operationId, operation }: DocumentOperation): SuccessResponse {
  const successes = Object.entries(operation.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status));
  if (successes.length !== 1)
    throw new Error(
      `Operation '${operationId}' documents ${successes.length} 2xx answers; the gateway needs one.`,
    );
  const [status, node] = successes[0]!;
  const response = dereference<Response>(document, node);
  return {
    status: Number(status),
    body: response.content?.['application/json']?.schema,
    location: response.headers?.Location !== undefined,
  };
}
