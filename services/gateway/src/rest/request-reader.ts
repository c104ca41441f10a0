import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { DocumentOperation } from '../openapi/operations';
import { resolveSchema, type Schema } from '../openapi/schemas';
import { longTypes, restNameOf, wrappedField, type Renames } from './response-writer';

/** What the validator accepted (`req.input`). */
export interface AcceptedInput {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
}

type Convert = (value: unknown) => unknown;
type Init = Record<string, unknown>;

/** Messages with a REST form of their own, read from a string. */
const stringForms: Record<string, Convert> = {
  'google.protobuf.Timestamp': (iso) => timestampFromDate(new Date(iso as string)),
  // `-amount`: descending by amount (the document's `sort` parameters).
  'costgov.common.v1.SortOrder': (sort) => ({
    field: (sort as string).replace(/^-/, ''),
    descending: (sort as string).startsWith('-'),
  }),
};

const asIs: Convert = (value) => value;

/**
 * The request message of an operation, as a protobuf-es init object, from what its validator accepted:
 * each field is the path parameter, query parameter or body property of its REST name (the proto name,
 * or a rename). Values were checked against the document already, so they are only converted: 64-bit
 * integers to BigInt, enum names to numbers, nested objects to messages, a `sort` string to a
 * SortOrder, an ISO string to a Timestamp, a bare list or map to the wrapper message that carries it
 * (`StringList`). `null`, and anything not sent, leaves the field unset: the service's default applies.
 * A message field whose own fields are all query parameters of the operation (a list's `page`:
 * `page`, `per_page`) is read from them.
 *
 * Every parameter and body property the document lists must land in a field: one that does not fails
 * at start, naming both, so that a field the document adds without the proto is not silently dropped.
 */
export function requestReader(
  document: Schema,
  operation: DocumentOperation,
  message: DescMessage,
  renames: Renames,
): (input: AcceptedInput) => Init {
  const parameters = (where: 'path' | 'query') =>
    new Map(
      operation.parameters.filter((p) => p.in === where).map((p) => [p.name, (p.schema ?? {}) as Schema]),
    );
  const path = parameters('path');
  const query = parameters('query');
  const bodySchema = operation.operation.requestBody?.content?.['application/json']?.schema;
  const body = new Map(bodySchema ? resolveSchema(document, bodySchema).properties : []);
  const unread = new Set([
    ...[...path.keys()].map((name) => `path parameter '${name}'`),
    ...[...query.keys()].map((name) => `query parameter '${name}'`),
    ...[...body.keys()].map((name) => `body property '${name}'`),
  ]);

  const steps: Array<(input: AcceptedInput, out: Init) => void> = [];
  for (const field of message.fields) {
    const name = restNameOf(field, renames);
    const flattened = field.fieldKind === 'message' ? flattenedFields(field.message) : undefined;
    if (flattened) {
      for (const [, rest] of flattened) unread.delete(`query parameter '${rest}'`);
      const parts = flattened.map(([inner, rest]) => ({
        local: inner.localName,
        rest,
        convert: converterOf(inner, query.get(rest)!),
      }));
      steps.push((input, out) => {
        let init: Init | undefined;
        for (const { local, rest, convert } of parts) {
          const value = input.query[rest];
          if (value !== undefined) (init ??= {})[local] = convert(value);
        }
        if (init) out[field.localName] = init;
      });
      continue;
    }
    const source = path.has(name) ? 'path' : query.has(name) ? 'query' : body.has(name) ? 'body' : undefined;
    if (!source) continue; // not from REST: the table or the service sets it
    unread.delete(`${source === 'body' ? 'body property' : `${source} parameter`} '${name}'`);
    if (field.oneof)
      throw new Error(`${message.typeName}.${field.name} is in a oneof, which REST cannot set.`);
    const convert = converterOf(
      field,
      (source === 'body' ? body : source === 'path' ? path : query).get(name)!,
    );
    const local = field.localName;
    steps.push(
      source === 'body'
        ? (input, out) => {
            const value = (input.body as Init | undefined)?.[name];
            if (value !== undefined && value !== null) out[local] = convert(value);
          }
        : (input, out) => {
            const value = input[source][name];
            if (value !== undefined) out[local] = convert(value);
          },
    );
  }
  if (unread.size > 0)
    throw new Error(
      `Operation '${operation.operationId}': ${[...unread].join(', ')} of the OpenAPI document ${unread.size > 1 ? 'have' : 'has'} no field in ${message.typeName}; add it to the proto, or rename a field in the operation table.`,
    );
  return (input) => {
    const out: Init = {};
    for (const step of steps) step(input, out);
    return out;
  };

  /** The fields of `nested` with their REST names, when every one is a query parameter of the operation. */
  function flattenedFields(nested: DescMessage): Array<[DescField, string]> | undefined {
    if (nested.fields.length === 0 || stringForms[nested.typeName] || wrappedField(nested)) return undefined;
    const named = nested.fields.map((f) => [f, restNameOf(f, renames)] as [DescField, string]);
    return named.every(([, rest]) => query.has(rest)) ? named : undefined;
  }

  function converterOf(field: DescField, schema: Schema): Convert {
    switch (field.fieldKind) {
      case 'scalar':
        return scalarConverter(field.scalar);
      case 'enum':
        return enumConverter(field);
      case 'message':
        return messageConverter(field.message, schema);
      case 'list': {
        const items = (resolveSchema(document, schema).items ?? {}) as Schema;
        const convert =
          field.listKind === 'scalar'
            ? scalarConverter(field.scalar)
            : field.listKind === 'enum'
              ? enumConverter(field)
              : messageConverter(field.message, items);
        return convert === asIs ? asIs : (list) => (list as unknown[]).map(convert);
      }
      case 'map': {
        const values = (resolveSchema(document, schema).additionalProperties ?? {}) as Schema;
        const convert =
          field.mapKind === 'scalar'
            ? scalarConverter(field.scalar)
            : field.mapKind === 'enum'
              ? enumConverter(field)
              : messageConverter(field.message, values);
        if (convert === asIs) return asIs;
        return (map) =>
          Object.fromEntries(Object.entries(map as Init).map(([key, value]) => [key, convert(value)]));
      }
    }
  }

  function messageConverter(nested: DescMessage, schema: Schema): Convert {
    const fromString = stringForms[nested.typeName];
    if (fromString) return fromString;
    const wrapped = wrappedField(nested);
    if (wrapped) {
      const convert = converterOf(wrapped, schema);
      return (value) => ({ values: convert(value) });
    }
    const properties = new Map(resolveSchema(document, schema).properties);
    const parts = nested.fields
      .filter((f) => properties.has(restNameOf(f, renames)))
      .map((f) => ({
        local: f.localName,
        rest: restNameOf(f, renames),
        convert: converterOf(f, properties.get(restNameOf(f, renames))!),
      }));
    const missing = [...properties.keys()].filter((key) => !parts.some((part) => part.rest === key));
    if (missing.length > 0)
      throw new Error(
        `Operation '${operation.operationId}': ${missing.join(', ')} of the OpenAPI document ${missing.length > 1 ? 'have' : 'has'} no field in ${nested.typeName}.`,
      );
    return (value) => {
      const init: Init = {};
      for (const { local, rest, convert } of parts) {
        const inner = (value as Init)[rest];
        if (inner !== undefined && inner !== null) init[local] = convert(inner);
      }
      return init;
    };
  }
}

function scalarConverter(type: ScalarType): Convert {
  if (longTypes.has(type)) return (value) => BigInt(value as number);
  if (type === ScalarType.BYTES) return (value) => Buffer.from(value as string, 'base64');
  return asIs;
}

function enumConverter(field: DescField): Convert {
  const numbers = new Map(field.enum!.values.map((value) => [value.localName.toLowerCase(), value.number]));
  return (name) => numbers.get(name as string) ?? 0;
}
