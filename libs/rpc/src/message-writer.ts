import {
  ScalarType,
  type DescField,
  type DescMessage,
  type Message,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';

/**
 * A message as domain code holds it: the proto's field names (camelCase), a Date for a
 * google.protobuf.Timestamp, a number (or bigint) for a 64-bit integer, null for a field with presence
 * that is absent, nested messages and lists alike. Every field of the message is there: a domain type
 * that lacks one, or names it otherwise, does not fit (see `messageWriter`'s `absent`).
 */
export type DomainShape<Desc extends DescMessage> = DomainOf<MessageShape<Desc>>;

type DomainOf<M> = {
  -readonly [K in keyof M as K extends '$typeName' | '$unknown' ? never : K]-?: undefined extends M[K]
    ? DomainValue<NonNullable<M[K]>> | null
    : DomainValue<M[K]>;
};

type DomainValue<V> = V extends Timestamp
  ? Date
  : V extends bigint
    ? number | bigint
    : V extends Uint8Array
      ? V
      : V extends readonly (infer E)[]
        ? readonly DomainValue<E>[]
        : V extends Message
          ? DomainOf<V>
          : V extends { case: unknown }
            ? V // a oneof: given as the init shape takes it
            : V extends object
              ? { [key: string]: DomainValue<V[keyof V]> }
              : V;

/** One field's conversion from its domain value (never null or undefined) to its init value. */
type Convert = (value: unknown) => unknown;

type Write = (value: Record<string, unknown>) => Record<string, unknown>;

const writers = new WeakMap<DescMessage, Write>();

const longTypes = new Set([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

const toBigint: Convert = (value) => (typeof value === 'number' ? BigInt(value) : value);
const toLongString: Convert = (value) => String(value);
const toTimestamp: Convert = (value) => (value instanceof Date ? timestampFromDate(value) : value);

function scalarConvert(scalar: ScalarType, longAsString: boolean): Convert | undefined {
  if (!longTypes.has(scalar)) return undefined;
  return longAsString ? toLongString : toBigint;
}

/** Wrappers (google.protobuf.*Value) are plain values in protobuf-es; other messages are written. */
function messageConvert(schema: DescMessage): Convert | undefined {
  if (schema.typeName === 'google.protobuf.Timestamp') return toTimestamp;
  if (schema.typeName.startsWith('google.protobuf.')) return undefined;
  let nested: Write | undefined; // looked up on first use: a message may contain itself
  return (value) => (nested ??= writerOf(schema))(value as Record<string, unknown>);
}

function fieldConvert(field: DescField): Convert | undefined {
  switch (field.fieldKind) {
    case 'scalar':
      return scalarConvert(field.scalar, field.longAsString);
    case 'enum':
      return undefined;
    case 'message':
      return messageConvert(field.message);
    case 'list': {
      const element =
        field.listKind === 'scalar'
          ? scalarConvert(field.scalar, field.longAsString)
          : field.listKind === 'message'
            ? messageConvert(field.message)
            : undefined;
      return element && ((value) => (value as unknown[]).map(element));
    }
    case 'map': {
      const entry =
        field.mapKind === 'scalar'
          ? scalarConvert(field.scalar, false)
          : field.mapKind === 'message'
            ? messageConvert(field.message)
            : undefined;
      return (
        entry &&
        ((value) =>
          Object.fromEntries(
            Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, entry(item)]),
          ))
      );
    }
  }
}

/**
 * The writer of a message, worked out once per schema: the fields' names, and for each the conversion
 * its domain value needs (none for most). A oneof is copied as given (its init shape).
 */
function writerOf(schema: DescMessage): Write {
  let write = writers.get(schema);
  if (write) return write;
  const names = schema.members.map((member) => member.localName);
  const converts = schema.members.map((member) =>
    member.kind === 'oneof' ? undefined : fieldConvert(member),
  );
  write = (value) => {
    const init: Record<string, unknown> = {};
    for (let index = 0; index < names.length; index++) {
      const name = names[index]!;
      const field = value[name];
      if (field === null || field === undefined) continue;
      const convert = converts[index];
      init[name] = convert ? convert(field) : field;
    }
    return init;
  };
  writers.set(schema, write);
  return write;
}

/**
 * The writer of one message from its domain shape: every field of the message read by its name from the
 * domain value, a Date as a Timestamp, a number as a bigint where the field is 64-bit, null or undefined
 * as unset (the field's default, or absent where it has presence). Fields of the domain value that the
 * message lacks are left out. `absent` names the fields the domain value may lack (they stay unset).
 */
export function messageWriter<Desc extends DescMessage, const Absent extends keyof DomainShape<Desc> = never>(
  schema: Desc,
  _options?: { absent: readonly Absent[] },
): (value: Omit<DomainShape<Desc>, Absent> & Partial<Pick<DomainShape<Desc>, Absent>>) => MessageInit<Desc> {
  const write = writerOf(schema);
  return (value) => write(value as Record<string, unknown>) as MessageInit<Desc>;
}

/** What a writer returns: the plain init object (never a message), so that it can be spread and added to. */
export type MessageInit<Desc extends DescMessage> = Exclude<MessageInitShape<Desc>, Message>;
