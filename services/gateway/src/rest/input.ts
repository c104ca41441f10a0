import type { operations } from '@costgov/client';

/** An operationId of the OpenAPI document. */
export type OperationId = keyof operations;

type Parameters<Id extends OperationId> = operations[Id]['parameters'];
/** `path?: never` (none) becomes `{}`; what the document lists keeps its types. */
type Part<T> = [NonNullable<T>] extends [never] ? Record<string, never> : NonNullable<T>;
type Body<Id extends OperationId> = operations[Id] extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : operations[Id] extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;

/**
 * What the validator accepted for operation `Id` (`req.input`), typed from the client generated from the
 * same document (libs/client): query values are already numbers or booleans where the document says so.
 */
export interface OperationInput<Id extends OperationId> {
  path: Part<Parameters<Id>['path']>;
  query: Part<Parameters<Id>['query']>;
  body: Body<Id>;
}
