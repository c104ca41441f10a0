/** A JSON Schema or OpenAPI object as the document writes it (only the keywords read here are typed). */
export type Schema = Record<string, unknown>;

/**
 * A schema of the document as the REST mapping reads it: `$ref`s followed, `allOf` merged into one list of
 * properties (in the document's order, which is the order of the keys in an answer), and a `null`
 * alternative (`type: [x, 'null']`, `oneOf: [x, {type: 'null'}]`, `enum: [..., null]`) turned into
 * `nullable`.
 */
export interface ResolvedSchema {
  type: string | undefined;
  nullable: boolean;
  properties: Array<[name: string, schema: Schema]>;
  required: ReadonlySet<string>;
  items: Schema | undefined;
  additionalProperties: Schema | undefined;
  enum: unknown[] | undefined;
}

/** The node a local `$ref` (`#/components/schemas/X`) points to, following chains of them. */
export function dereference<T = Schema>(document: Schema, node: T | { $ref: string }): T {
  let current: unknown = node;
  for (let hops = 0; current && typeof current === 'object' && '$ref' in current; hops++) {
    const ref = (current as { $ref: string }).$ref;
    if (hops >= 10 || !ref.startsWith('#/')) throw new Error(`Cannot follow $ref '${ref}'.`);
    current = ref
      .slice(2)
      .split('/')
      .reduce<unknown>(
        (at, part) => (at as Record<string, unknown>)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')],
        document,
      );
    if (current === undefined) throw new Error(`$ref '${ref}' points nowhere in the document.`);
  }
  return current as T;
}

const isNullSchema = (schema: Schema) => schema.type === 'null';

export function resolveSchema(document: Schema, node: Schema): ResolvedSchema {
  const schema = dereference(document, node);
  const alternatives = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (alternatives) {
    const others = alternatives.filter((branch) => !isNullSchema(dereference(document, branch)));
    if (others.length !== 1)
      throw new Error(`A schema with ${others.length} non-null alternatives has no single REST shape.`);
    const inner = resolveSchema(document, others[0]!);
    return { ...inner, nullable: inner.nullable || others.length < alternatives.length };
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  const values = schema.enum as unknown[] | undefined;
  const resolved: ResolvedSchema = {
    type: types.find((type) => type !== 'null'),
    nullable: types.includes('null') || (values?.includes(null) ?? false),
    properties: [],
    required: new Set(),
    items: schema.items as Schema | undefined,
    additionalProperties:
      typeof schema.additionalProperties === 'object' ? (schema.additionalProperties as Schema) : undefined,
    enum: values?.filter((value) => value !== null),
  };
  const required = new Set<string>();
  for (const part of (schema.allOf ?? []) as Schema[]) {
    const merged = resolveSchema(document, part);
    resolved.type ??= merged.type;
    resolved.properties.push(...merged.properties);
    for (const name of merged.required) required.add(name);
  }
  resolved.properties.push(...Object.entries((schema.properties ?? {}) as Record<string, Schema>));
  for (const name of (schema.required ?? []) as string[]) required.add(name);
  if (resolved.properties.length > 0) resolved.type ??= 'object';
  return { ...resolved, required };
}
