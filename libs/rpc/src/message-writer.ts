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

interface FieldStep {
  name: string;
  convert: Convert | undefined;
}

const plans = new WeakMap<DescMessage, FieldStep[]>();

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
  return (value) => write(schema, value as Record<string, unknown>);
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
 * The steps of a message, worked out once per schema. A oneof is copied as given (its init shape), a
 * field converted only where its domain value differs from what `create` takes.
 */
function planOf(schema: DescMessage): FieldStep[] {
  let plan = plans.get(schema);
  if (!plan) {
    // Set before the fields are read: a message that contains itself finds its (lazy) plan here.
    plan = [];
    plans.set(schema, plan);
    for (const member of schema.members) {
      plan.push({
        name: member.localName,
        convert: member.kind === 'oneof' ? undefined : fieldConvert(member),
      });
    }
  }
  return plan;
}

function write(schema: DescMessage, value: Record<string, unknown>): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  for (const { name, convert } of planOf(schema)) {
    const field = value[name];
    if (field === null || field === undefined) continue;
    init[name] = convert ? convert(field) : field;
  }
  return init;
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
  planOf(schema);
  return (value) => write(schema, value as Record<string, unknown>) as MessageInit<Desc>;
}

/** What a writer returns: the plain init object (never a message), so that it can be spread and added to. */
export type MessageInit<Desc extends DescMessage> = Exclude<MessageInitShape<Desc>, Message>;
