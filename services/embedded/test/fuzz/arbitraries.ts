import fc from 'fast-check';
import { atPointer, type Schema } from './contract';

/**
 * A JSON token written as it is: numbers JSON.stringify cannot produce (`1e400`, 20 digits, `-0`) and
 * deliberately broken fragments.
 */
export class RawJson {
  constructor(readonly text: string) {}
  toJSON(): string {
    return `<raw ${this.text.length > 60 ? `${this.text.slice(0, 60)}…` : this.text}>`;
  }
}

/** JSON text of a generated value, RawJson tokens written verbatim. */
export function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([key, item]) => `${JSON.stringify(key)}:${toJsonText(item)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

// ── Hostile values: what the issue found, and the usual suspects ──

const long = (unit: string, count: number) => unit.repeat(count);

/** Strings that broke or could break a text rule: NUL, lone surrogates, emoji, control and RTL characters, sizes. */
export const hostileStrings: string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDFFF',
  '\uD83D',
  '😀',
  '😀'.repeat(101),
  'e\u0301'.repeat(50),
  '\u202Eevil',
  '\r\n',
  '\t',
  '\u0007',
  '\uFEFF',
  '\uFEFFbom',
  '%00',
  '%F0%9F%98%80',
  "' OR 1=1 --",
  '${7*7}{{7*7}}',
  '../../etc/passwd',
  '__proto__',
  'constructor',
  'null',
  'true',
  'NaN',
  '2147483648',
  long('a', 201),
  long('a', 256),
  long('é', 1_000),
  long('x', 65_536),
  long('y', 300_000),
];

/** Number tokens past every integer and float limit, written raw into the JSON. */
export const hostileNumberTokens: string[] = [
  '2147483648',
  '-2147483649',
  '4294967296',
  '9007199254740993',
  '12345678901234567890',
  '-12345678901234567890',
  '1e400',
  '-1e400',
  '1e-400',
  '1e308',
  '-0',
  '0.5',
  '1.0',
  '1E2',
  '-1',
  '0',
];

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...hostileStrings), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 24 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }), weight: 1 },
);

const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...hostileNumberTokens).map((text) => new RawJson(text)),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map((n) => new RawJson(String(n))),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** A value of any type, usually the wrong one for where it lands. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 4 },
  { arbitrary: hostileNumber, weight: 3 },
  { arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [null], { '': '' }), weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 1 },
  {
    // Deep nesting, for every recursive walk over a body.
    arbitrary: fc
      .constantFrom(10, 1_000, 100_000)
      .map((depth) => new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
    weight: 1,
  },
);

/**
 * Query and path texts: number edge cases as text, then the hostile strings short enough for a URL
 * (Node refuses request lines past 16 KiB with a bare 431 before any handler runs).
 */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '2147483648',
    'Infinity',
    '-Infinity',
    'NaN',
    '1e400',
    '12345678901234567890',
    '0x10',
    '0b1',
    '-1',
    '0',
    '1.5',
    ' 1',
    '１',
    '+1',
    '00001',
    '1e2',
  ),
  hostileString.filter((text) => text.length <= 4_000),
);

// ── Schema → arbitrary ──

export interface SchemaContext {
  document: Schema;
  /** Mix wrong types, unknown keys and missing required keys into the values. */
  hostile: boolean;
  /** Strings the system knows (ids of real users, projects): a plain string is sometimes one of them. */
  known: string[];
  /** Values worth trying for properties of these names (SCIM PATCH paths, member ids), beside the schema's. */
  hints?: Record<string, fc.Arbitrary<unknown>>;
}

const maxDepth = 5;

function resolve(document: Schema, schema: Schema): Schema {
  let current = schema;
  for (let hops = 0; typeof current.$ref === 'string' && hops < 10; hops += 1) {
    const { $ref, ...rest } = current;
    current = { ...(atPointer(document, $ref as string) as Schema), ...rest };
  }
  return current;
}

/** `allOf` of objects as one object schema: the union of properties and required keys. */
function mergeAllOf(document: Schema, schema: Schema): Schema {
  const parts = (schema.allOf as Schema[]).map((part) => resolve(document, part));
  const properties: Record<string, Schema> = {};
  const required = new Set<string>();
  for (const part of parts) {
    const merged = part.allOf ? mergeAllOf(document, part) : part;
    Object.assign(properties, merged.properties ?? {});
    for (const key of (merged.required ?? []) as string[]) required.add(key);
  }
  return { type: 'object', properties, required: [...required] };
}

const stringFormats: Record<string, fc.Arbitrary<string>> = {
  uuid: fc.uuid(),
  email: fc.emailAddress(),
  'date-time': fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  uri: fc.webUrl(),
};

function stringArbitrary(schema: Schema, context: SchemaContext): fc.Arbitrary<string> {
  if (typeof schema.format === 'string' && stringFormats[schema.format]) return stringFormats[schema.format]!;
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern));
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = Math.max(minLength, Math.min((schema.maxLength as number | undefined) ?? 40, 40));
  const plain = fc.oneof(
    { arbitrary: fc.string({ minLength, maxLength }), weight: 3 },
    { arbitrary: fc.string({ unit: 'grapheme', minLength, maxLength }), weight: 1 },
  );
  if (context.known.length === 0) return plain;
  return fc.oneof(
    { arbitrary: plain, weight: 3 },
    { arbitrary: fc.constantFrom(...context.known), weight: 1 },
  );
}

function objectArbitrary(schema: Schema, context: SchemaContext, depth: number): fc.Arbitrary<unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = ((schema.required ?? []) as string[]).filter((key) => key in properties);
  const model = Object.fromEntries(
    Object.entries(properties).map(([key, property]) => {
      const fromSchema = valueOf(property, context, depth + 1);
      const hint = context.hints?.[key];
      return [
        key,
        hint ? fc.oneof({ arbitrary: hint, weight: 2 }, { arbitrary: fromSchema, weight: 1 }) : fromSchema,
      ];
    }),
  );
  const complete = fc.record(model, { requiredKeys: required });
  let record: fc.Arbitrary<Record<string, unknown>> = complete;
  const extra = schema.additionalProperties;
  if (extra && typeof extra === 'object' && Object.keys(properties).length === 0) {
    const names = resolve(context.document, (schema.propertyNames ?? {}) as Schema);
    record = fc.dictionary(
      stringArbitrary(names, { ...context, known: [] }),
      valueOf(extra as Schema, context, depth + 1),
      {
        maxKeys: Math.min((schema.maxProperties as number | undefined) ?? 5, 5),
      },
    );
  }
  if (!context.hostile) return record;
  // Hostile: sometimes required keys go missing, sometimes an unknown (or hostile-named) key joins.
  const partial = fc.record(model, { requiredKeys: [] });
  return fc
    .tuple(
      fc.oneof({ arbitrary: record, weight: 3 }, { arbitrary: partial, weight: 1 }),
      fc.option(
        fc.tuple(
          fc.oneof(fc.constantFrom('colour', 'id', 'meta', '__proto__', 'constructor'), hostileString),
          hostileValue,
        ),
        {
          freq: 3,
        },
      ),
    )
    .map(([value, added]) => (added ? { ...value, [added[0]]: added[1] } : value));
}

function typedArbitrary(
  type: string,
  schema: Schema,
  context: SchemaContext,
  depth: number,
): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({
        min: (schema.minimum as number | undefined) ?? -1_000,
        max: (schema.maximum as number | undefined) ?? 1_000_000,
      });
    case 'number':
      return fc.double({
        min: (schema.minimum as number | undefined) ?? -1e6,
        max: (schema.maximum as number | undefined) ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'string':
      return stringArbitrary(schema, context);
    case 'array': {
      const items = valueOf((schema.items ?? {}) as Schema, context, depth + 1);
      const constraints = {
        minLength: (schema.minItems as number | undefined) ?? 0,
        maxLength: Math.min((schema.maxItems as number | undefined) ?? 4, 4),
      };
      return schema.uniqueItems
        ? fc.uniqueArray(items, { ...constraints, selector: (item) => toJsonText(item) })
        : fc.array(items, constraints);
    }
    case 'object':
      return depth > maxDepth ? fc.constant({}) : objectArbitrary(schema, context, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/**
 * Values for a schema of the subset the document uses (type, enum, const, oneOf/anyOf/allOf, properties,
 * additionalProperties, items, length and range bounds, pattern, format). Hand-written rather than a
 * library because the JSON-Schema-to-fast-check packages are unmaintained 0.0.x releases, and
 * json-schema-faker draws its own random values, which fast-check could neither replay from a seed nor shrink.
 */
export function valueOf(input: Schema, context: SchemaContext, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(context.document, input);
  let arbitrary: fc.Arbitrary<unknown>;
  if ('const' in schema) arbitrary = fc.constant(schema.const);
  else if (Array.isArray(schema.enum)) arbitrary = fc.constantFrom(...(schema.enum as unknown[]));
  else if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) {
    const choices = ((schema.oneOf ?? schema.anyOf) as Schema[]).map((choice) =>
      valueOf(choice, context, depth),
    );
    arbitrary = fc.oneof(...choices);
  } else if (Array.isArray(schema.allOf))
    arbitrary = valueOf(mergeAllOf(context.document, schema), context, depth);
  else {
    const types = Array.isArray(schema.type)
      ? (schema.type as string[])
      : [(schema.type as string | undefined) ?? (schema.properties ? 'object' : 'any')];
    arbitrary = fc.oneof(...types.map((type) => typedArbitrary(type, schema, context, depth)));
  }
  if (!context.hostile) return arbitrary;
  return fc.oneof({ arbitrary, weight: 5 }, { arbitrary: hostileValue, weight: 1 });
}
