import {
  create,
  ScalarType,
  type DescEnum,
  type DescEnumValue,
  type DescField,
  type DescMessage,
} from '@bufbuild/protobuf';
import { isScalarZeroValue, scalarZeroValue } from '@bufbuild/protobuf/reflect';
import { FeatureSet_FieldPresence, timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { resolveSchema, type ResolvedSchema, type Schema } from '../openapi/schemas';

/**
 * The REST shape of any protobuf-es message, driven by the OpenAPI schema of the answer: its keys in the
 * schema's order, each the proto field of the same name (or renamed, `Renames`). One plan per schema and
 * message type is compiled at start from the descriptors; a request only runs it.
 *
 * Not protobuf-es's `toJson`: its proto3 JSON (int64 as strings, timestamps without fixed milliseconds,
 * defaults left out, field-number order) would need a second walk per request to become this shape.
 *
 * - Timestamps are ISO 8601 with milliseconds (`2026-11-27T08:00:00.000Z`); an unset one is `null`.
 * - A field with presence (`optional`, a message) left unset is `null` where the schema allows `null`,
 *   left out where the property is not required, and its default otherwise. A field without presence
 *   at its zero value (`''`, `0`) is `null` where the schema allows `null`: proto3 cannot tell it apart
 *   from "not set".
 * - 64-bit integers are JSON numbers; enums are their value's name without the enum's prefix, in lower
 *   case (`CREDENTIAL_KIND_API_KEY` → `api_key`), which must be one of the schema's `enum`.
 * - A message whose only field is `values` (a list or map kept apart from "not given") is that value.
 * - A property the message lacks is looked for in a message field the schema does not name (the
 *   `webhook` of `WebhookWithSecret` writes its fields beside `secret`).
 *
 * A property no field answers fails at start, naming both, rather than going missing from answers.
 */

/** Per message type name, the proto fields whose REST name differs: `{ 'pkg.Msg': { proto_name: 'rest_name' } }`. */
export type Renames = Readonly<Record<string, Readonly<Record<string, string>>>>;

export const restNameOf = (field: DescField, renames: Renames): string =>
  renames[field.parent.typeName]?.[field.name] ?? field.name;

/** Writes a message (or a value of a field) in its REST shape. */
export type Write = (value: unknown) => unknown;

type Message = Record<string, unknown>;

const omitted = Symbol('omitted');

/** One key of an object's REST shape. */
interface Step {
  key: string;
  get: (message: Message) => unknown;
  /** The field's local name when its value is written as it is (read by name, no call). */
  plain?: string | undefined;
  /** Whether the key may be left out (an unset field that is neither required nor nullable). */
  mayOmit: boolean;
}

const asIs: Write = (value) => value;
const timestampType = 'google.protobuf.Timestamp';
export const longTypes: ReadonlySet<ScalarType> = new Set([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

/** A wrapper message: its one field `values` is a list or a map whose presence matters. */
export const wrappedField = (message: DescMessage): DescField | undefined => {
  const [only, ...rest] = message.fields;
  return rest.length === 0 && only?.name === 'values' && only.fieldKind !== 'scalar' ? only : undefined;
};

function scalarWriter(type: ScalarType): Write {
  if (longTypes.has(type)) return (value) => Number(value);
  if (type === ScalarType.BYTES) return (value) => Buffer.from(value as Uint8Array).toString('base64');
  return asIs;
}

const readerOf = (field: DescField): ((message: Message) => unknown) => {
  const { oneof } = field;
  if (!oneof) return (message) => message[field.localName];
  return (message) => {
    const chosen = message[oneof.localName] as { case?: string; value?: unknown };
    return chosen.case === field.localName ? chosen.value : undefined;
  };
};

/** The writers of one document: each schema and message type pair is compiled once, on first use. */
export function responseWriters(document: Schema, renames: Renames = {}) {
  const compiled = new Map<Schema, Map<string, Write>>();
  const where = (message: DescMessage, key: string) => `'${key}' of ${message.typeName}`;

  /** The writer of `message` as `schema` describes it. */
  function messageWriter(schema: Schema, message: DescMessage): Write {
    if (message.typeName === timestampType) return (value) => timestampDate(value as Timestamp).toISOString();
    const wrapped = wrappedField(message);
    if (wrapped) {
      const write = valueWriter(wrapped, schema);
      return (value) => write((value as Message).values);
    }
    let bySchema = compiled.get(schema);
    if (!bySchema) compiled.set(schema, (bySchema = new Map()));
    const known = bySchema.get(message.typeName);
    if (known) return known;
    // Registered before it is built, so that a message that contains itself refers to this writer.
    let write: Write = () => {
      throw new Error(`The writer of ${message.typeName} was used while it was being built.`);
    };
    bySchema.set(message.typeName, (value) => write(value));
    write = objectWriter(resolveSchema(document, schema), message);
    bySchema.set(message.typeName, write);
    return write;
  }

  function objectWriter(resolved: ResolvedSchema, message: DescMessage): Write {
    if (resolved.type !== 'object') throw new Error(`${message.typeName} is written as a ${resolved.type}.`);
    const byName = new Map(message.fields.map((field) => [restNameOf(field, renames), field]));
    const named = new Set(resolved.properties.map(([key]) => key));
    const steps = resolved.properties.map(([key, schema]): Step => {
      const required = resolved.required.has(key);
      const field = byName.get(key);
      if (field) return { key, ...propertyWriter(field, schema, required) };
      // A message field the schema does not name, whose own fields are written beside the others.
      for (const holder of message.fields) {
        if (holder.fieldKind !== 'message' || named.has(restNameOf(holder, renames))) continue;
        const inner = holder.message.fields.find((f) => restNameOf(f, renames) === key);
        if (!inner) continue;
        const { get, mayOmit } = propertyWriter(inner, schema, required);
        const read = readerOf(holder);
        let empty: Message | undefined;
        return {
          key,
          get: (m) => get((read(m) ?? (empty ??= create(holder.message))) as Message),
          mayOmit,
        };
      }
      throw new Error(
        `The OpenAPI document's ${where(message, key)} has no field of that name: add it to the proto, or rename a field in the operation table.`,
      );
    });
    if (steps.some((step) => step.mayOmit)) {
      return (value) => {
        const out: Record<string, unknown> = {};
        for (const step of steps) {
          const written = step.get(value as Message);
          if (written !== omitted) out[step.key] = written;
        }
        return out;
      };
    }
    // Every key is always written: one object literal, as a hand-written mapper builds it (one shape,
    // fields read by name), compiled from the plan as ajv compiles its validators. Keys and field names
    // are JSON-quoted, so no text of the document becomes code.
    const entries = steps.map(({ key, plain }, i) =>
      plain === undefined
        ? `${JSON.stringify(key)}: get[${i}](m)`
        : `${JSON.stringify(key)}: m[${JSON.stringify(plain)}]`,
    );
    const build = new Function('get', `return (m) => ({ ${entries.join(', ')} });`) as (
      get: Step['get'][],
    ) => Write;
    return build(steps.map((step) => step.get));
  }

  /** Reads the field of a message and writes it as the property `schema` describes. */
  function propertyWriter(field: DescField, schema: Schema, required: boolean): Omit<Step, 'key'> {
    const resolved = resolveSchema(document, schema);
    const read = readerOf(field);
    const write = valueWriter(field, schema, resolved);
    const plain = write === asIs && !field.oneof ? field.localName : undefined;
    if (field.fieldKind === 'list' || field.fieldKind === 'map')
      return { get: (message) => write(read(message)), plain, mayOmit: false };
    const isTimestamp = field.fieldKind === 'message' && field.message.typeName === timestampType;
    const hasPresence = field.presence !== FeatureSet_FieldPresence.IMPLICIT || field.oneof !== undefined;
    let unsetValue: unknown;
    const unset = (): unknown => {
      if (resolved.nullable || isTimestamp) return null;
      if (!required) return omitted;
      if (field.fieldKind === 'message') return (unsetValue ??= write(create(field.message)));
      if (field.fieldKind === 'enum') return write(field.enum.values[0]?.number ?? 0);
      return write(scalarZeroValue(field.scalar, false));
    };
    // Without presence, proto3 cannot tell the zero value from "not set": where the schema allows null it is.
    const zeroIsUnset = resolved.nullable && !hasPresence;
    const isZero =
      field.fieldKind === 'enum'
        ? (value: unknown) => value === 0
        : (value: unknown) => isScalarZeroValue(field.scalar!, value);
    return {
      get: (message) => {
        const value = read(message);
        if (value === undefined || (zeroIsUnset && isZero(value))) return unset();
        return write(value);
      },
      plain: hasPresence || zeroIsUnset ? undefined : plain,
      mayOmit: hasPresence && !resolved.nullable && !isTimestamp && !required,
    };
  }

  /** Writes a field's value (a whole list or map for those). */
  function valueWriter(field: DescField, schema: Schema, resolved = resolveSchema(document, schema)): Write {
    switch (field.fieldKind) {
      case 'scalar':
        return scalarWriter(field.scalar);
      case 'enum':
        return enumWriter(field.enum, resolved, field);
      case 'message':
        return messageWriter(schema, field.message);
      case 'list': {
        const items = resolved.items;
        if (!items) throw new Error(`The document's ${where(field.parent, field.name)} is not an array.`);
        const write =
          field.listKind === 'scalar'
            ? scalarWriter(field.scalar)
            : field.listKind === 'enum'
              ? enumWriter(field.enum, resolveSchema(document, items), field)
              : messageWriter(items, field.message);
        return write === asIs ? asIs : (list) => (list as unknown[]).map(write);
      }
      case 'map': {
        const values = resolved.additionalProperties;
        if (!values) throw new Error(`The document's ${where(field.parent, field.name)} is not a map.`);
        const write =
          field.mapKind === 'scalar'
            ? scalarWriter(field.scalar)
            : field.mapKind === 'enum'
              ? enumWriter(field.enum, resolveSchema(document, values), field)
              : messageWriter(values, field.message);
        if (write === asIs) return asIs;
        return (map) => {
          const out: Record<string, unknown> = {};
          for (const key of Object.keys(map as object)) out[key] = write((map as Message)[key]);
          return out;
        };
      }
    }
  }

  function enumWriter(type: DescEnum, resolved: ResolvedSchema, field: DescField): Write {
    const nameOf = (value: DescEnumValue) => value.localName.toLowerCase();
    const undocumented = type.values.filter(
      (value) => value.number !== 0 && resolved.enum && !resolved.enum.includes(nameOf(value)),
    );
    if (undocumented.length > 0)
      throw new Error(
        `${type.typeName} ${undocumented.map((v) => v.name).join(', ')} (${where(field.parent, field.name)}) not in the document's enum.`,
      );
    const names = new Map(type.values.map((value) => [value.number, nameOf(value)]));
    return (value) => names.get(value as number) ?? null;
  }

  return {
    /** The writer of `message` as the document's `schema` describes it, compiled once. */
    of: (schema: Schema, message: DescMessage): Write => messageWriter(schema, message),
  };
}
