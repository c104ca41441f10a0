import { multiValuedUserAttributes } from '../patch/documents';
import type { FilterOp } from './parser';
import type { AttributeSpec } from './to-sql';

// SQL builders for the identity service's tables. Case-insensitive attributes compare lower(column) with
// a lower-cased parameter, so an index on lower(column) serves eq and sw (text_pattern_ops) and a trigram
// index serves co.

const likeSql = (expression: string, op: FilterOp, param: string): string => {
  if (op === 'eq') return `${expression} = ${param}`;
  const pattern = op === 'co' ? `'%' || ${param}::text || '%'` : `${param}::text || '%'`;
  return `${expression} LIKE ${pattern} ESCAPE '\\'`;
};

const stringColumn = (column: string, caseExact: boolean, optional: boolean): AttributeSpec => ({
  type: 'string',
  caseExact,
  sql: (op, param) => likeSql(caseExact ? column : `lower(${column})`, op, param),
  ...(optional ? { absent: `${column} IS NULL` } : {}),
});

/**
 * A sub-attribute of a multi-valued attribute: compared on its own (`emails.value eq "x"`: some element
 * matches) or inside a value path (`emails[type eq "work" and value eq "x"]`: one element matches all).
 */
const elementAttribute = (
  exists: (condition: string) => string,
  absentAll: string,
  attribute: { type: 'string' | 'boolean'; caseExact: boolean; expression: string },
): AttributeSpec => {
  const { type, caseExact, expression } = attribute;
  const sql =
    type === 'boolean'
      ? (_op: FilterOp, param: string) => `${expression} = ${param}`
      : (op: FilterOp, param: string) => likeSql(caseExact ? expression : `lower(${expression})`, op, param);
  return {
    type,
    caseExact,
    multiValued: true,
    sql: (op, param) => exists(sql(op, param)),
    absent: absentAll,
    element: { sql, absent: `${expression} IS NULL`, exists },
  };
};

/** `emails.value`, `emails.type`, `emails.primary`, and the same of every multi-valued User attribute. */
const multiValuedUserFilterAttributes = Object.fromEntries(
  multiValuedUserAttributes.flatMap(({ attribute, column }) => {
    const element = (condition: string) =>
      `EXISTS (SELECT 1 FROM jsonb_array_elements(${column}) AS e WHERE ${condition})`;
    const none = `COALESCE(jsonb_array_length(${column}), 0) = 0`;
    const name = attribute.toLowerCase();
    return [
      [
        `${name}.value`,
        elementAttribute(element, none, { type: 'string', caseExact: false, expression: `e->>'value'` }),
      ],
      [
        `${name}.type`,
        elementAttribute(element, none, { type: 'string', caseExact: false, expression: `e->>'type'` }),
      ],
      [
        `${name}.primary`,
        elementAttribute(element, none, {
          type: 'boolean',
          caseExact: true,
          expression: `(e->>'primary')::boolean`,
        }),
      ],
    ] as const;
  }),
);

/** Filterable attributes of SCIM Users (table `scim_users`). */
export const userFilterAttributes: Readonly<Record<string, AttributeSpec>> = Object.freeze({
  id: stringColumn('id::text', true, false),
  username: stringColumn('user_name', false, false),
  externalid: stringColumn('external_id', true, true),
  displayname: stringColumn('display_name', false, true),
  'name.formatted': stringColumn('formatted_name', false, true),
  'name.familyname': stringColumn('family_name', false, true),
  'name.givenname': stringColumn('given_name', false, true),
  'name.middlename': stringColumn('middle_name', false, true),
  'name.honorificprefix': stringColumn('honorific_prefix', false, true),
  'name.honorificsuffix': stringColumn('honorific_suffix', false, true),
  ...multiValuedUserFilterAttributes,
  active: { type: 'boolean', caseExact: true, sql: (_op, param) => `active = ${param}` },
});

const memberElement = (condition: string) =>
  `EXISTS (SELECT 1 FROM scim_group_members AS m WHERE m.group_id = scim_groups.id AND ${condition})`;

/**
 * Filterable attributes of SCIM Groups (table `scim_groups`, members in `scim_group_members`). The
 * membership subqueries name `scim_groups.id`, so the list query must read `FROM scim_groups` unaliased.
 */
export const groupFilterAttributes: Readonly<Record<string, AttributeSpec>> = Object.freeze({
  id: stringColumn('id::text', true, false),
  displayname: stringColumn('display_name', false, false),
  externalid: stringColumn('external_id', true, true),
  'members.value': elementAttribute(
    memberElement,
    `NOT EXISTS (SELECT 1 FROM scim_group_members AS m WHERE m.group_id = scim_groups.id)`,
    { type: 'string', caseExact: true, expression: 'm.user_id::text' },
  ),
});
