import fc from 'fast-check';
import { hostileText } from './arbitraries';
import type { Operation } from './contract';
import { resourceKindOf, type Fixtures } from './requests';

/** SCIM-specific arbitraries: query parameters that reach the filter and projection parsers, and PatchOps. */

// What the document's descriptions say these parameters take, so generated values reach the parser
// behind them (filter, projection) instead of failing at the first character.
const scimAttributes = [
  'id',
  'userName',
  'name',
  'name.givenName',
  'name.familyName',
  'name.middleName',
  'emails',
  'emails.value',
  'active',
  'groups',
  'meta',
  'meta.created',
  'externalId',
  'displayName',
  'members',
  'members.value',
  'schemas',
  'urn:ietf:params:scim:schemas:core:2.0:User:userName',
  'bogus',
];
const filterValue = fc.oneof(
  fc.constantFrom('ada@example.com', 'x', '', 'true', '2819c223-7f76-453a-919d-413861904646'),
  hostileText,
);
export const scimFilter: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(...scimAttributes, 'emails[type eq "work"].value', 'members[value eq "x"]'),
      fc.constantFrom('eq', 'co', 'sw', 'ew', 'ne', 'gt', 'pr', 'EQ'),
      filterValue,
    )
    .map(([attribute, operator, value]) =>
      operator === 'pr' ? `${attribute} pr` : `${attribute} ${operator} ${JSON.stringify(value)}`,
    ),
  fc
    .tuple(
      fc.constantFrom('userName', 'displayName', 'externalId'),
      filterValue,
      fc.constantFrom('and', 'or', 'AND'),
    )
    .map(([attribute, value, join]) => `${attribute} eq ${JSON.stringify(value)} ${join} active eq true`),
  fc.constantFrom(
    'userName eq',
    '(userName eq "a"',
    'not (active eq true)',
    'userName eq "unterminated',
    '"',
  ),
);
export const attributeList = fc
  .uniqueArray(fc.constantFrom(...scimAttributes), { minLength: 0, maxLength: 4 })
  .map((names) => names.join(','));

/**
 * PatchOps as Okta and Entra send them (the forms the document lists), with ordinary or hostile
 * values, so PATCH reaches the engine's success paths and not only its first refusal.
 */
export function scimPatchArbitrary(operation: Operation, fixtures: Fixtures): fc.Arbitrary<unknown> {
  const userId = fc.constantFrom(...fixtures.ids.users);
  const text = fc.oneof(
    { arbitrary: fc.string({ minLength: 1, maxLength: 20 }), weight: 4 },
    { arbitrary: hostileText, weight: 1 },
  );
  const op = (name: string) => fc.constantFrom(name, name[0]!.toUpperCase() + name.slice(1));
  const userOperation: fc.Arbitrary<unknown> = fc.oneof(
    fc.record({
      op: op('replace'),
      path: fc.constant('active'),
      value: fc.constantFrom(true, false, 'True', 'False'),
    }),
    fc.record({
      op: op('replace'),
      path: fc.constantFrom(
        'name.givenName',
        'name.familyName',
        'name.middleName',
        'name.honorificPrefix',
        'externalId',
        'displayName',
        'title',
      ),
      value: text,
    }),
    fc.record({
      op: op('add'),
      path: fc.constant('emails[type eq "work"].value'),
      value: fc.oneof(fc.emailAddress(), text),
    }),
    fc.record({
      op: op('remove'),
      path: fc.constantFrom('name.middleName', 'externalId', 'emails[type eq "work"]'),
    }),
    fc.record({
      op: op('replace'),
      value: fc.record(
        {
          'name.givenName': text,
          active: fc.boolean(),
          'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department': text,
        },
        { requiredKeys: [] },
      ),
    }),
    fc.record({
      op: op('replace'),
      path: fc.constant('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager'),
      value: fc.oneof(
        userId,
        userId.map((value) => ({ value })),
      ),
    }),
  );
  const groupOperation: fc.Arbitrary<unknown> = fc.oneof(
    fc.record({
      op: op('add'),
      path: fc.constant('members'),
      value: fc.uniqueArray(
        userId.map((value) => ({ value })),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    fc.record({ op: op('remove'), path: userId.map((id) => `members[value eq "${id}"]`) }),
    fc.record({
      op: op('remove'),
      path: fc.constant('members'),
      value: fc.uniqueArray(
        userId.map((value) => ({ value })),
        { maxLength: 2 },
      ),
    }),
    fc.record({ op: op('replace'), path: fc.constantFrom('displayName', 'externalId'), value: text }),
    fc.record({
      op: op('replace'),
      value: fc.record({ displayName: text, externalId: text }, { requiredKeys: [] }),
    }),
  );
  const operations = resourceKindOf(operation.path) === 'groups' ? groupOperation : userOperation;
  return fc.record({
    schemas: fc.constant(['urn:ietf:params:scim:api:messages:2.0:PatchOp']),
    Operations: fc.array(operations, { maxLength: 3 }),
  });
}
