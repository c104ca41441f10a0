import { describe, expect, it } from 'vitest';
import { charLength, textProblem } from '@costgov/errors';
import { ScimError } from './errors';
import {
  filterToSql,
  groupFilterAttributes,
  likeEscape,
  matchesFilter,
  parseFilter,
  userFilterAttributes,
  type FilterNode,
} from './filter';

const eq = (attribute: string, value: string | boolean | null): FilterNode => ({
  kind: 'compare',
  attribute,
  op: 'eq',
  value,
});
const cmp = (attribute: string, op: 'eq' | 'co' | 'sw', value: string | boolean | null): FilterNode => ({
  kind: 'compare',
  attribute,
  op,
  value,
});
const and = (left: FilterNode, right: FilterNode): FilterNode => ({ kind: 'and', left, right });

function scimErrorOf(run: () => unknown): ScimError {
  try {
    run();
  } catch (error) {
    if (error instanceof ScimError) return error;
    throw error;
  }
  throw new Error('expected a ScimError, but nothing was thrown');
}

describe('parseFilter builds a tree from valid filters', () => {
  it.each<[string, string, FilterNode]>([
    ['one comparison', 'userName eq "bjensen"', eq('username', 'bjensen')],
    ['sw on a sub-attribute', 'name.familyName sw "J"', cmp('name.familyname', 'sw', 'J')],
    ['co on emails.value', 'emails.value co "@example.com"', cmp('emails.value', 'co', '@example.com')],
    ['a boolean', 'active eq false', eq('active', false)],
    ['null', 'externalId eq null', eq('externalid', null)],
    ['and', 'userName co "a" and active eq true', and(cmp('username', 'co', 'a'), eq('active', true))],
    [
      'and is left-associative',
      'userName sw "a" and active eq true and name.givenName eq "x"',
      and(and(cmp('username', 'sw', 'a'), eq('active', true)), eq('name.givenname', 'x')),
    ],
    [
      'parentheses group',
      'userName sw "a" and (active eq true and name.givenName eq "x")',
      and(cmp('username', 'sw', 'a'), and(eq('active', true), eq('name.givenname', 'x'))),
    ],
    ['nested parentheses', '((userName eq "x"))', eq('username', 'x')],
    [
      'parentheses without spaces',
      '(userName eq "x")and(active eq true)',
      and(eq('username', 'x'), eq('active', true)),
    ],
    [
      'operators, and, attributes and literals in any case',
      'USERNAME EQ "X" AND Active eQ TRUE',
      and(eq('username', 'X'), eq('active', true)),
    ],
    [
      'the core schema URN as a prefix',
      'urn:ietf:params:scim:schemas:core:2.0:User:userName eq "x"',
      eq('username', 'x'),
    ],
    [
      'the core schema URN before a sub-attribute',
      'urn:ietf:params:scim:schemas:core:2.0:User:name.familyName sw "x"',
      cmp('name.familyname', 'sw', 'x'),
    ],
    ['an escaped quote', 'userName eq "a\\"b"', eq('username', 'a"b')],
    ['an escaped backslash', 'userName eq "a\\\\b"', eq('username', 'a\\b')],
    ['a unicode escape', 'name.givenName eq "Ren\\u00e9e"', eq('name.givenname', 'Renée')],
    ['"and" inside a string is data', 'userName eq "this and that"', eq('username', 'this and that')],
    ['spaces, tabs and line breaks between tokens', '  userName\teq\n"x"  ', eq('username', 'x')],
  ])('%s: %s', (_name, filter, expected) => {
    expect(parseFilter(filter, userFilterAttributes)).toEqual(expected);
  });

  it.each<[string, FilterNode]>([
    ['displayName eq "Group1"', eq('displayname', 'Group1')],
    [
      'members.value eq "2819c223-7f76-453a-919d-413861904646"',
      eq('members.value', '2819c223-7f76-453a-919d-413861904646'),
    ],
    ['id eq "e9e30dba-f08f-4109-8486-d5c6a331660a"', eq('id', 'e9e30dba-f08f-4109-8486-d5c6a331660a')],
    ['urn:ietf:params:scim:schemas:core:2.0:Group:displayName sw "Eng"', cmp('displayname', 'sw', 'Eng')],
  ])('groups: %s', (filter, expected) => {
    expect(parseFilter(filter, groupFilterAttributes)).toEqual(expected);
  });
});

describe('filters that identity providers send', () => {
  it.each<[string, string, typeof userFilterAttributes, FilterNode, { sql: string; params: unknown[] }]>([
    [
      'Okta SCIM 2.0 protocol reference, "Get Users with filter" (existence check before create)',
      'userName eq "test.user@okta.local"',
      userFilterAttributes,
      eq('username', 'test.user@okta.local'),
      { sql: '(lower(user_name) = $1)', params: ['test.user@okta.local'] },
    ],
    [
      'Microsoft Learn, "Tutorial: Develop and plan provisioning for a SCIM endpoint", Get User by query',
      'userName eq "Test_User_dfeef4c5-5681-4387-b016-bdf221e82081"',
      userFilterAttributes,
      eq('username', 'Test_User_dfeef4c5-5681-4387-b016-bdf221e82081'),
      { sql: '(lower(user_name) = $1)', params: ['test_user_dfeef4c5-5681-4387-b016-bdf221e82081'] },
    ],
    [
      'Microsoft Learn, "Tutorial: Develop and plan provisioning for a SCIM endpoint", matching on externalId',
      'externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"',
      userFilterAttributes,
      eq('externalid', '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef'),
      { sql: '(external_id = $1)', params: ['0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef'] },
    ],
    [
      'Microsoft Learn, "Tutorial: Develop and plan provisioning for a SCIM endpoint", Get Group by displayName',
      'displayName eq "Group1"',
      groupFilterAttributes,
      eq('displayname', 'Group1'),
      { sql: '(lower(display_name) = $1)', params: ['group1'] },
    ],
    [
      'group membership check written as members.value (the supported form of members[value eq "id"])',
      'id eq "e9e30dba-f08f-4109-8486-d5c6a331660a" and members.value eq "2819c223-7f76-453a-919d-413861904646"',
      groupFilterAttributes,
      and(
        eq('id', 'e9e30dba-f08f-4109-8486-d5c6a331660a'),
        eq('members.value', '2819c223-7f76-453a-919d-413861904646'),
      ),
      {
        sql:
          '((id::text = $1) AND (EXISTS (SELECT 1 FROM scim_group_members AS m ' +
          'WHERE m.group_id = scim_groups.id AND m.user_id::text = $2)))',
        params: ['e9e30dba-f08f-4109-8486-d5c6a331660a', '2819c223-7f76-453a-919d-413861904646'],
      },
    ],
  ])('%s', (_source, filter, attributes, tree, sql) => {
    const node = parseFilter(filter, attributes);
    expect(node).toEqual(tree);
    expect(filterToSql(node, attributes, 1)).toEqual(sql);
  });

  it.each<[string, string, typeof userFilterAttributes, FilterNode, { sql: string; params: unknown[] }]>([
    [
      'Entra and Okta: members[value eq "id"] (groups a user is in)',
      'members[value eq "2819c223-7f76-453a-919d-413861904646"]',
      groupFilterAttributes,
      {
        kind: 'valuePath',
        attribute: 'members',
        filter: eq('members.value', '2819c223-7f76-453a-919d-413861904646'),
      },
      {
        sql:
          '(EXISTS (SELECT 1 FROM scim_group_members AS m WHERE m.group_id = scim_groups.id AND ' +
          '(m.user_id::text = $1)))',
        params: ['2819c223-7f76-453a-919d-413861904646'],
      },
    ],
    [
      'Entra: emails[type eq "work"].value eq "x" (one element matches both)',
      'emails[type eq "work"].value eq "Ada@Example.com"',
      userFilterAttributes,
      {
        kind: 'valuePath',
        attribute: 'emails',
        filter: {
          kind: 'and',
          left: eq('emails.type', 'work'),
          right: eq('emails.value', 'Ada@Example.com'),
        },
      },
      {
        sql:
          "(EXISTS (SELECT 1 FROM jsonb_array_elements(emails) AS e WHERE ((lower(e->>'type') = $1) AND " +
          "(lower(e->>'value') = $2))))",
        params: ['work', 'ada@example.com'],
      },
    ],
    [
      'Entra: phoneNumbers[type eq "work"].value eq "x", as emails',
      'phoneNumbers[type eq "work"].value eq "+1 555"',
      userFilterAttributes,
      {
        kind: 'valuePath',
        attribute: 'phonenumbers',
        filter: {
          kind: 'and',
          left: eq('phonenumbers.type', 'work'),
          right: eq('phonenumbers.value', '+1 555'),
        },
      },
      {
        sql:
          "(EXISTS (SELECT 1 FROM jsonb_array_elements(phone_numbers) AS e WHERE ((lower(e->>'type') = $1) AND " +
          "(lower(e->>'value') = $2))))",
        params: ['work', '+1 555'],
      },
    ],
    [
      'RFC 7644 §3.4.2.2: emails[type eq "work" and value co "@example.com"]',
      'emails[type eq "work" and value co "@example.com"]',
      userFilterAttributes,
      {
        kind: 'valuePath',
        attribute: 'emails',
        filter: {
          kind: 'and',
          left: eq('emails.type', 'work'),
          right: cmp('emails.value', 'co', '@example.com'),
        },
      },
      {
        sql:
          "(EXISTS (SELECT 1 FROM jsonb_array_elements(emails) AS e WHERE ((lower(e->>'type') = $1) AND " +
          "(lower(e->>'value') LIKE '%' || $2::text || '%' ESCAPE '\\'))))",
        params: ['work', '@example.com'],
      },
    ],
    [
      'a value path with primary and null, then another comparison',
      'emails[primary eq true and type eq null] and active eq true',
      userFilterAttributes,
      {
        kind: 'and',
        left: {
          kind: 'valuePath',
          attribute: 'emails',
          filter: { kind: 'and', left: eq('emails.primary', true), right: eq('emails.type', null) },
        },
        right: eq('active', true),
      },
      {
        sql:
          "((EXISTS (SELECT 1 FROM jsonb_array_elements(emails) AS e WHERE (((e->>'primary')::boolean = $1) AND " +
          "(e->>'type' IS NULL)))) AND (active = $2))",
        params: [true, true],
      },
    ],
  ])('value paths: %s', (_source, filter, attributes, tree, sql) => {
    const node = parseFilter(filter, attributes);
    expect(node).toEqual(tree);
    expect(filterToSql(node, attributes, 1)).toEqual(sql);
  });
});

describe('invalid filters are 400 invalidFilter with a message that says what and where', () => {
  const tooMany = Array.from({ length: 21 }, (_, i) => `userName eq "u${i}"`).join(' and ');
  it.each<[string, string, string]>([
    ['or', 'userName eq "a" or active eq true', "unsupported operator 'or' at position 17"],
    [
      'or after parentheses',
      '(userName eq "a") OR (active eq true)',
      "unsupported operator 'OR' at position 19",
    ],
    ['not', 'not (userName eq "a")', "unsupported operator 'not' at position 1"],
    ['pr', 'userName pr', "unsupported operator 'pr' at position 10"],
    ['gt', 'userName gt "a"', "unsupported operator 'gt' at position 10"],
    ['ge', 'userName ge "a"', "unsupported operator 'ge' at position 10"],
    ['lt', 'userName lt "a"', "unsupported operator 'lt' at position 10"],
    ['le', 'userName le "a"', "unsupported operator 'le' at position 10"],
    ['ne', 'userName ne "a"', "unsupported operator 'ne' at position 10"],
    ['ew', 'userName ew "a"', "unsupported operator 'ew' at position 10"],
    ['an unknown operator', 'userName like "a"', "unknown operator 'like' at position 10"],
    ['an unknown attribute', 'nickName eq "x"', "unknown or unsupported attribute 'nickName' at position 1"],
    [
      'a group attribute on users',
      'members.value eq "x"',
      "unknown or unsupported attribute 'members.value'",
    ],
    [
      'an unknown sub-attribute in a phoneNumbers value filter',
      'phoneNumbers[extension eq "12"]',
      "unknown or unsupported attribute 'extension'",
    ],
    [
      'an extension attribute',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "1"',
      'unknown or unsupported attribute',
    ],
    [
      'constructor (no prototype lookup)',
      'constructor eq "x"',
      "unknown or unsupported attribute 'constructor'",
    ],
    ['__proto__', '__proto__ eq "x"', "unknown or unsupported attribute '__proto__'"],
    ['toString', 'toString eq "x"', "unknown or unsupported attribute 'toString'"],
    ['co on a boolean', 'active co "x"', "operator 'co' cannot be used on boolean attribute: 'active co'"],
    ['sw on a boolean', 'active sw true', "operator 'sw' cannot be used on boolean attribute"],
    ['a boolean compared with a string', 'active eq "true"', 'boolean attribute compared with a string'],
    ['a string compared with a boolean', 'userName eq true', 'string attribute compared with true'],
    ['co with null', 'userName co null', 'null can only be compared with eq'],
    ['a number', 'userName eq 42', 'numeric value 42 at position 13 is not supported'],
    [
      'a missing )',
      '(userName eq "a"',
      "missing ')' for the '(' at position 1: found end of filter at position 17",
    ],
    ['an extra )', 'userName eq "a")', "unbalanced ')' at position 16"],
    ['empty parentheses', '()', "expected an attribute name at position 2, found ')'"],
    [
      'trailing garbage',
      'userName eq "a" active eq true',
      "unexpected 'active' at position 17; expected 'and'",
    ],
    [
      'a dangling and',
      'userName eq "a" and',
      'expected an attribute name at position 20, found end of filter',
    ],
    [
      'a missing operator',
      'userName "a"',
      "expected an operator (eq, co, sw) after 'userName' at position 10",
    ],
    [
      'a missing value',
      'userName eq',
      "expected a value (a quoted string, true, false or null) after 'eq' at position 12",
    ],
    ['a bare word as value', 'userName eq bjensen', "after 'eq' at position 13, found 'bjensen'"],
    ['single quotes', "userName eq 'a'", 'position 13: strings must be in double quotes'],
    ['an unterminated string', 'userName eq "abc', 'unterminated string starting at position 13'],
    ['an invalid escape', 'userName eq "a\\x"', 'at position 13: not a valid JSON string'],
    ['a stray character', 'userName == "a"', "unexpected character '=' at position 10"],
    [
      'a value filter on a single-valued attribute',
      'name[givenName eq "x"]',
      "'name' at position 1 takes no value filter; multi-valued attributes that do: emails, phonenumbers",
    ],
    ['a value filter without its ]', 'emails[type eq "work"', "missing ']' for the '[' at position 7"],
    ['a stray ]', 'userName eq "a"]', "unbalanced ']' at position 16"],
    ['a nested value filter', 'emails[type[value eq "x"]]', 'a value filter inside a value filter'],
    [
      'an unknown sub-attribute in a value filter',
      'emails[label eq "x"]',
      "unknown or unsupported attribute 'label'",
    ],
    ['an empty filter', '', 'empty filter'],
    ['a blank filter', '   ', 'empty filter'],
    [
      'over 1,000 characters',
      `userName eq "${'a'.repeat(990)}"`,
      'filter too long: 1004 characters, at most 1000',
    ],
    ['more than 20 comparisons', tooMany, 'too many comparisons: more than 20'],
  ])('%s: %s', (_name, filter, message) => {
    const error = scimErrorOf(() => parseFilter(filter, userFilterAttributes));
    expect(error.status).toBe(400);
    expect(error.scimType).toBe('invalidFilter');
    expect(error.detail).toContain(message);
  });

  it('accepts exactly 20 comparisons and exactly 1,000 characters', () => {
    const twenty = Array.from({ length: 20 }, (_, i) => `userName eq "u${i}"`).join(' and ');
    expect(() => parseFilter(twenty, userFilterAttributes)).not.toThrow();
    const longest = `userName eq "${'a'.repeat(986)}"`;
    expect(longest).toHaveLength(1000);
    expect(() => parseFilter(longest, userFilterAttributes)).not.toThrow();
  });
});

describe('error messages quote the filter by characters, never by UTF-16 units', () => {
  // A message cut inside a surrogate pair is not valid UTF-8 and once killed the process (issue 7).
  it.each([
    ['an emoji alone', '😀', "unexpected character '😀' at position 1"],
    ['an emoji after an attribute', 'userName eq "a" 😀', "unexpected character '😀' at position 17"],
    ['an emoji as a value', 'userName eq 😀', "unexpected character '😀' at position 13"],
    ['an emoji in an attribute name', 'user😀Name eq "a"', "unexpected character '😀' at position 5"],
    [
      'emoji before the error',
      '"😀😀" eq "a"',
      'expected an attribute name at position 1, found string "😀😀"',
    ],
    ['a long string value', `active eq true and "${'😀'.repeat(200)}"`, 'found string "😀😀'],
  ])('%s', (_name, filter, message) => {
    const error = scimErrorOf(() => parseFilter(filter, userFilterAttributes));
    expect(error.scimType).toBe('invalidFilter');
    expect(error.detail).toContain(message);
    expect(textProblem(error.detail)).toBeUndefined();
    expect(charLength(error.detail)).toBeLessThanOrEqual(300);
  });

  it('counts the length limit in characters', () => {
    const emoji = `userName eq "${'😀'.repeat(986)}"`;
    expect(charLength(emoji)).toBe(1000);
    expect(() => parseFilter(emoji, userFilterAttributes)).not.toThrow();
  });

  it.each([
    ['a NUL character', 'userName eq "a\u0000b"', 'must not contain NUL characters'],
    ['an escaped NUL', 'userName eq "a\\u0000b"', 'must not contain NUL characters'],
    ['an escaped lone surrogate', 'userName eq "\\ud83d"', 'must be valid Unicode'],
  ])('refuses %s with invalidFilter', (_name, filter, message) => {
    const error = scimErrorOf(() => parseFilter(filter, userFilterAttributes));
    expect(error.scimType).toBe('invalidFilter');
    expect(error.detail).toContain(message);
    expect(textProblem(error.detail)).toBeUndefined();
  });
});

describe('likeEscape escapes LIKE wildcards and the escape character', () => {
  it.each([
    ['plain', 'plain'],
    ['100%', '100\\%'],
    ['a_b', 'a\\_b'],
    ['back\\slash', 'back\\\\slash'],
    ['%_\\', '\\%\\_\\\\'],
  ])('%s', (input, expected) => {
    expect(likeEscape(input)).toBe(expected);
  });
});

describe('filterToSql builds parenthesised SQL with numbered parameters', () => {
  it.each<[string, string, number, string, unknown[]]>([
    ['eq, case-insensitive: lower-cased', 'userName eq "BJensen"', 1, '(lower(user_name) = $1)', ['bjensen']],
    [
      'co, case-insensitive: lower-cased and LIKE-escaped',
      'userName co "Jen%_\\\\"',
      1,
      "(lower(user_name) LIKE '%' || $1::text || '%' ESCAPE '\\')",
      ['jen\\%\\_\\\\'],
    ],
    [
      'sw, case-insensitive',
      'userName sw "BJ"',
      1,
      "(lower(user_name) LIKE $1::text || '%' ESCAPE '\\')",
      ['bj'],
    ],
    ['eq, case-exact: as given', 'externalId eq "AbC"', 1, '(external_id = $1)', ['AbC']],
    [
      'co, case-exact: escaped, case kept',
      'externalId co "A_b"',
      1,
      "(external_id LIKE '%' || $1::text || '%' ESCAPE '\\')",
      ['A\\_b'],
    ],
    ['sw, case-exact', 'externalId sw "Ab%"', 1, "(external_id LIKE $1::text || '%' ESCAPE '\\')", ['Ab\\%']],
    ['a sub-attribute', 'name.familyName eq "Jensen"', 1, '(lower(family_name) = $1)', ['jensen']],
    ['a boolean', 'active eq true', 1, '(active = $1)', [true]],
    ['eq null on an optional attribute', 'externalId eq null', 1, '(external_id IS NULL)', []],
    ['eq null on a required attribute matches nothing', 'userName eq null', 1, '(FALSE)', []],
    [
      'emails.value',
      'emails.value co "@Example.com"',
      1,
      "(EXISTS (SELECT 1 FROM jsonb_array_elements(emails) AS e WHERE lower(e->>'value') LIKE '%' || $1::text || '%' ESCAPE '\\'))",
      ['@example.com'],
    ],
    [
      'phoneNumbers.value',
      'phoneNumbers.value co "555"',
      1,
      "(EXISTS (SELECT 1 FROM jsonb_array_elements(phone_numbers) AS e WHERE lower(e->>'value') LIKE '%' || $1::text || '%' ESCAPE '\\'))",
      ['555'],
    ],
    [
      'numbering starts at firstParamIndex and follows the tree left to right',
      'userName sw "a" and (active eq false and name.familyName co "x")',
      3,
      "((lower(user_name) LIKE $3::text || '%' ESCAPE '\\') AND ((active = $4) AND " +
        "(lower(family_name) LIKE '%' || $5::text || '%' ESCAPE '\\')))",
      ['a', false, 'x'],
    ],
  ])('%s: %s', (_name, filter, first, sql, params) => {
    expect(filterToSql(parseFilter(filter, userFilterAttributes), userFilterAttributes, first)).toEqual({
      sql,
      params,
    });
  });

  it('refuses a hand-built tree naming an attribute the table does not have', () => {
    const error = scimErrorOf(() => filterToSql(eq('nickname', 'x'), userFilterAttributes, 1));
    expect(error.scimType).toBe('invalidFilter');
  });
});

describe('matchesFilter evaluates a tree in memory with the case rules of each attribute', () => {
  const attributes = {
    value: { type: 'string', caseExact: false },
    type: { type: 'string', caseExact: false },
    primary: { type: 'boolean', caseExact: true },
    id: { type: 'string', caseExact: true },
  } as const;
  const email: Record<string, string | boolean> = {
    value: 'BJensen@Example.com',
    type: 'work',
    primary: true,
    id: 'AbC',
  };
  const read = (attribute: string) => email[attribute];
  it.each<[string, boolean]>([
    ['type eq "WORK"', true],
    ['value co "example.COM"', true],
    ['value sw "bjen"', true],
    ['value sw "example"', false],
    ['primary eq true', true],
    ['primary eq false', false],
    ['id eq "abc"', false],
    ['id eq "AbC"', true],
    ['type eq "work" and primary eq true', true],
    ['type eq "work" and primary eq false', false],
    ['type eq null', false],
  ])('%s → %s', (filter, expected) => {
    expect(matchesFilter(parseFilter(filter, attributes), attributes, read)).toBe(expected);
  });
});
