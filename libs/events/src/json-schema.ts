import { ScalarType, type DescEnum, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { FeatureSet_FieldPresence } from '@bufbuild/protobuf/wkt';

export type JsonSchema = Record<string, unknown>;

/** The comment of a message, or of one of its fields (by proto name), if it has one. */
export type Describe = (typeName: string, field?: string) => string | undefined;

/**
 * JSON Schemas (draft 07, which AsyncAPI schemas extend) of proto messages in their proto3 JSON form,
 * as `toJson` writes them: lowerCamelCase names, 64-bit integers as strings, enums by name, well-known
 * types in their special forms. Messages become named definitions referenced with `refPrefix`.
 */
export function messageSchemas(
  roots: DescMessage[],
  refPrefix: string,
  describe: Describe = () => undefined,
): Record<string, JsonSchema> {
  const definitions: Record<string, JsonSchema> = {};
  const typeNames = new Map<string, string>();
  const visit = (message: DescMessage): JsonSchema => {
    const special = wellKnown(message);
    if (special) return special;
    const seen = typeNames.get(message.name);
    if (seen !== undefined && seen !== message.typeName) {
      throw new Error(`Two messages named ${message.name}: ${seen} and ${message.typeName}.`);
    }
    if (seen === undefined) {
      typeNames.set(message.name, message.typeName); // before the fields: recursive messages refer to it
      definitions[message.name] = objectSchema(message, visit, describe);
    }
    return { $ref: `${refPrefix}${message.name}` };
  };
  roots.forEach(visit);
  return Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => a.localeCompare(b)));
}

function objectSchema(
  message: DescMessage,
  visit: (message: DescMessage) => JsonSchema,
  describe: Describe,
): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of message.fields) {
    const description = describe(message.typeName, field.name);
    properties[field.jsonName] = { ...(description ? { description } : {}), ...fieldSchema(field, visit) };
    // Producers write implicit-presence fields even at their default (alwaysEmitImplicit); fields with
    // explicit presence (`optional`, messages, oneof members) only when set.
    if (emittedAlways(field)) required.push(field.jsonName);
  }
  const description = describe(message.typeName);
  return {
    type: 'object',
    ...(description ? { description } : {}),
    'x-proto-message': message.typeName,
    properties,
    ...(required.length > 0 ? { required } : {}),
    // Fields added later (a compatible change) must not break readers that validate.
    additionalProperties: true,
  };
}

const emittedAlways = (field: DescField): boolean =>
  field.fieldKind === 'list' ||
  field.fieldKind === 'map' ||
  (field.fieldKind !== 'message' &&
    field.oneof === undefined &&
    field.presence === FeatureSet_FieldPresence.IMPLICIT);

function fieldSchema(field: DescField, visit: (message: DescMessage) => JsonSchema): JsonSchema {
  const described = (schema: JsonSchema): JsonSchema =>
    field.deprecated ? { ...schema, deprecated: true } : schema;
  switch (field.fieldKind) {
    case 'scalar':
      return described(scalarSchema(field.scalar));
    case 'enum':
      return described(enumSchema(field.enum));
    case 'message':
      return described(visit(field.message));
    case 'list':
      return described({
        type: 'array',
        items:
          field.listKind === 'scalar'
            ? scalarSchema(field.scalar)
            : field.listKind === 'enum'
              ? enumSchema(field.enum)
              : visit(field.message),
      });
    case 'map':
      return described({
        type: 'object',
        ...(isIntegerKey(field.mapKey) ? { propertyNames: { pattern: '^-?[0-9]+$' } } : {}),
        additionalProperties:
          field.mapKind === 'scalar'
            ? scalarSchema(field.scalar)
            : field.mapKind === 'enum'
              ? enumSchema(field.enum)
              : visit(field.message),
      });
  }
}

const isIntegerKey = (key: ScalarType): boolean => key !== ScalarType.STRING && key !== ScalarType.BOOL;

const int64 = (format: string, pattern: string): JsonSchema => ({ type: 'string', format, pattern });

function scalarSchema(scalar: ScalarType): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: 'string' };
    case ScalarType.BOOL:
      return { type: 'boolean' };
    case ScalarType.BYTES:
      return { type: 'string', contentEncoding: 'base64' };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      // Producers write finite numbers only (proto3 JSON would write NaN and the infinities as strings).
      return { type: 'number', format: scalar === ScalarType.DOUBLE ? 'double' : 'float' };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: 'integer', format: 'int32', minimum: -2147483648, maximum: 2147483647 };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: 'integer', format: 'uint32', minimum: 0, maximum: 4294967295 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return int64('int64', '^-?[0-9]+$');
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return int64('uint64', '^[0-9]+$');
  }
}

const enumSchema = (desc: DescEnum): JsonSchema => ({
  type: 'string',
  'x-proto-enum': desc.typeName,
  enum: desc.values.map((value) => value.name),
});

/** The well-known types with a JSON form of their own. */
function wellKnown(message: DescMessage): JsonSchema | undefined {
  switch (message.typeName) {
    case 'google.protobuf.Timestamp':
      return { type: 'string', format: 'date-time' };
    case 'google.protobuf.Duration':
      return { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]{1,9})?s$' };
    case 'google.protobuf.FieldMask':
      return { type: 'string' };
    case 'google.protobuf.Struct':
      return { type: 'object' };
    case 'google.protobuf.ListValue':
      return { type: 'array' };
    case 'google.protobuf.Value':
    case 'google.protobuf.Any':
      return {};
    case 'google.protobuf.Empty':
      return { type: 'object', additionalProperties: false };
    case 'google.protobuf.StringValue':
      return { type: ['string', 'null'] };
    case 'google.protobuf.BoolValue':
      return { type: ['boolean', 'null'] };
    case 'google.protobuf.BytesValue':
      return { type: ['string', 'null'], contentEncoding: 'base64' };
    case 'google.protobuf.DoubleValue':
    case 'google.protobuf.FloatValue':
      return { type: ['number', 'null'] };
    case 'google.protobuf.Int32Value':
    case 'google.protobuf.UInt32Value':
      return { type: ['integer', 'null'] };
    case 'google.protobuf.Int64Value':
    case 'google.protobuf.UInt64Value':
      return { type: ['string', 'null'], pattern: '^-?[0-9]+$' };
    default:
      return undefined;
  }
}
