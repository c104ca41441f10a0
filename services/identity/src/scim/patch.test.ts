import { afterEach, describe, expect, it } from 'vitest';
import { ScimError, type ScimType } from './errors';
import { applyGroupPatch, applyUserPatch, patchOpSchema, type GroupDoc, type UserDoc } from './patch';

const enterpriseUrn = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

const user: UserDoc = {
  userName: 'Test_User_dfeef4c5-5681-4387-b016-bdf221e82081',
  externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
  name: { givenName: 'Given', familyName: 'Family', formatted: 'Given Family' },
  displayName: 'Given Family',
  emails: [{ value: 'Test_User_dfeef4c5@testuser.com', type: 'work', primary: true }],
  phoneNumbers: [],
  active: true,
  enterprise: { employeeNumber: '701984', department: 'Tour Operations' },
};

const group: GroupDoc = {
  displayName: 'Group1',
  externalId: '60f4df3b-0c3e-4b9e-8b5a-0d6c1d2f9a11',
  members: ['f648f8d5ea4e4cd38e9c', '89bb1940-b905-4575-9e7f-6f887cfb368e'],
};

const patchBody = (operations: unknown[]) => ({ schemas: [patchOpSchema], Operations: operations });

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/** Applies the patch to a frozen copy, so that any mutation of the input throws, and checks it is unchanged. */
function patchUser(body: unknown, doc: UserDoc = user): UserDoc {
  const input = deepFreeze(structuredClone(doc));
  const result = applyUserPatch(input, body);
  expect(input).toEqual(doc);
  expect(result).not.toBe(input);
  return result;
}

function patchGroup(body: unknown, doc: GroupDoc = group): GroupDoc {
  const input = deepFreeze(structuredClone(doc));
  const result = applyGroupPatch(input, body);
  expect(input).toEqual(doc);
  expect(result).not.toBe(input);
  return result;
}

/** The base document with an edit applied: the expected result of a case. */
function userWith(edit: (doc: UserDoc) => void, doc: UserDoc = user): UserDoc {
  const copy = structuredClone(doc);
  edit(copy);
  return copy;
}

function groupWith(edit: (doc: GroupDoc) => void): GroupDoc {
  const copy = structuredClone(group);
  edit(copy);
  return copy;
}

function scimErrorOf(run: () => unknown): ScimError {
  try {
    run();
  } catch (error) {
    if (error instanceof ScimError) return error;
    throw error;
  }
  throw new Error('expected a ScimError, but nothing was thrown');
}

interface Case<D> {
  name: string;
  operations: unknown[];
  expected: D;
  doc?: D;
}

describe('user PATCH: request bodies that Okta and Entra document', () => {
  const okta = 'Okta SCIM 2.0 protocol reference';
  const tutorial =
    'Microsoft Learn, "Tutorial: Develop and plan provisioning for a SCIM endpoint in Microsoft Entra ID"';
  const knownIssues =
    'Microsoft Learn, "Known issues and resolutions with SCIM 2.0 protocol compliance of the Microsoft Entra user provisioning service"';
  it.each<Case<UserDoc>>([
    {
      name: `${okta}, deactivate a user: path-less replace {active: false}`,
      operations: [{ op: 'replace', value: { active: false } }],
      expected: userWith((u) => (u.active = false)),
    },
    {
      name: `${okta}, reactivate a user: path-less replace {active: true}`,
      doc: userWith((u) => (u.active = false)),
      operations: [{ op: 'replace', value: { active: true } }],
      expected: user,
    },
    {
      name: `${tutorial}, Update User [Multi-valued properties]: work email and familyName`,
      operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ],
      expected: userWith((u) => {
        u.emails = [{ value: 'updatedEmail@microsoft.com', type: 'work', primary: true }];
        u.name.familyName = 'updatedFamilyName';
      }),
    },
    {
      name: `${tutorial}, Update User [Single-valued properties]: userName`,
      operations: [
        { op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' },
      ],
      expected: userWith((u) => (u.userName = '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com')),
    },
    {
      name: `${tutorial}, Disable User: active as the string "False"`,
      operations: [{ op: 'Replace', path: 'active', value: 'False' }],
      expected: userWith((u) => (u.active = false)),
    },
    {
      name: `${tutorial}: active as the string "True" reactivates`,
      doc: userWith((u) => (u.active = false)),
      operations: [{ op: 'Replace', path: 'active', value: 'True' }],
      expected: user,
    },
    {
      name: `${knownIssues}: path-less replace with dotted, value-filter and URN keys`,
      operations: [
        {
          op: 'replace',
          value: {
            'name.givenName': 'Barbara',
            'emails[type eq "work"].value': 'babs@example.com',
            [`${enterpriseUrn}:department`]: 'Sales',
            'urn:ietf:params:scim:schemas:core:2.0:User:userName': 'babs',
          },
        },
      ],
      expected: userWith((u) => {
        u.name.givenName = 'Barbara';
        u.emails = [{ value: 'babs@example.com', type: 'work', primary: true }];
        u.enterprise = { employeeNumber: '701984', department: 'Sales' };
        u.userName = 'babs';
      }),
    },
    {
      name: `${knownIssues}: path-less add with the same keys`,
      operations: [{ op: 'Add', value: { displayName: 'Babs', [`${enterpriseUrn}:costCenter`]: '4130' } }],
      expected: userWith((u) => {
        u.displayName = 'Babs';
        u.enterprise = { ...u.enterprise, costCenter: '4130' };
      }),
    },
    {
      name: `${tutorial}: Add on emails[type eq "work"].value creates the work email when there is none`,
      doc: userWith((u) => (u.emails = [])),
      operations: [{ op: 'Add', path: 'emails[type eq "work"].value', value: 'new@example.com' }],
      expected: userWith((u) => (u.emails = [{ type: 'work', value: 'new@example.com' }])),
    },
    {
      name: 'Entra and Okta placeholder passwords are ignored (path and path-less)',
      operations: [
        { op: 'replace', path: 'password', value: 'xKq!placeholder' },
        { op: 'replace', value: { password: 'another-placeholder' } },
      ],
      expected: user,
    },
  ])('$name', ({ operations, expected, doc }) => {
    expect(patchUser(patchBody(operations), doc)).toEqual(expected);
  });
});

describe('user PATCH: attributes, operations and case rules', () => {
  it.each<Case<UserDoc>>([
    {
      name: 'every name sub-attribute of RFC 7643 §4.1.1 by path, in any case',
      operations: [
        { op: 'replace', path: 'name.middleName', value: 'M' },
        { op: 'add', path: 'name.HONORIFICPREFIX', value: 'Dr.' },
        {
          op: 'replace',
          path: 'urn:ietf:params:scim:schemas:core:2.0:User:name.honorificSuffix',
          value: 'III',
        },
        { op: 'replace', path: 'name.formatted', value: 'Dr. Given M Family III' },
      ],
      expected: userWith((u) => {
        u.name = { ...u.name, middleName: 'M', honorificPrefix: 'Dr.', honorificSuffix: 'III' };
        u.name.formatted = 'Dr. Given M Family III';
      }),
    },
    {
      name: 'name sub-attributes set to null or removed are unassigned (Okta and Entra send null)',
      doc: userWith((u) => (u.name = { ...u.name, middleName: 'M', honorificPrefix: 'Dr.' })),
      operations: [
        { op: 'replace', value: { name: { middleName: null, honorificSuffix: null } } },
        { op: 'remove', path: 'name.honorificPrefix' },
      ],
      expected: user,
    },
    {
      name: "a path-less replace with dotted name keys ('name.middleName')",
      operations: [{ op: 'replace', value: { 'name.middleName': 'M', 'name.honorificPrefix': 'Ms.' } }],
      expected: userWith((u) => (u.name = { ...u.name, middleName: 'M', honorificPrefix: 'Ms.' })),
    },
    {
      name: 'empty Operations change nothing',
      operations: [],
      expected: user,
    },
    {
      name: 'op and path in any case',
      operations: [
        { op: 'REPLACE', path: 'NAME.GIVENNAME', value: 'G' },
        { op: 'rePlace', path: 'UserName', value: 'u' },
      ],
      expected: userWith((u) => {
        u.name.givenName = 'G';
        u.userName = 'u';
      }),
    },
    {
      name: 'active accepts true, "true" and "TRUE"',
      doc: userWith((u) => (u.active = false)),
      operations: [
        { op: 'replace', path: 'active', value: 'TRUE' },
        { op: 'replace', path: 'active', value: false },
        { op: 'replace', path: 'active', value: 'true' },
      ],
      expected: user,
    },
    {
      name: 'add on a single-valued attribute replaces it',
      operations: [{ op: 'add', path: 'externalId', value: 'ext-2' }],
      expected: userWith((u) => (u.externalId = 'ext-2')),
    },
    {
      name: 'operations apply in order',
      operations: [
        { op: 'replace', path: 'displayName', value: 'first' },
        { op: 'replace', path: 'displayName', value: 'second' },
      ],
      expected: userWith((u) => (u.displayName = 'second')),
    },
    {
      name: 'remove clears optional attributes',
      operations: [
        { op: 'remove', path: 'externalId' },
        { op: 'remove', path: 'displayName' },
        { op: 'remove', path: 'name.formatted' },
      ],
      expected: userWith((u) => {
        delete u.externalId;
        delete u.displayName;
        delete u.name.formatted;
      }),
    },
    {
      name: 'replace with null clears an optional attribute (RFC 7643 §2.5)',
      operations: [{ op: 'replace', path: 'externalId', value: null }],
      expected: userWith((u) => delete u.externalId),
    },
    {
      name: 'replace name with an object sets the given sub-attributes and keeps the others',
      operations: [{ op: 'replace', path: 'name', value: { givenName: 'Babs', FamilyName: 'Jensen' } }],
      expected: userWith(
        (u) => (u.name = { givenName: 'Babs', familyName: 'Jensen', formatted: 'Given Family' }),
      ),
    },
    {
      name: 'remove name clears it',
      operations: [{ op: 'remove', path: 'name' }],
      expected: userWith((u) => (u.name = {})),
    },
    {
      name: 'the core schema URN as the path of a value object',
      operations: [
        { op: 'replace', path: 'urn:ietf:params:scim:schemas:core:2.0:User', value: { displayName: 'URN' } },
      ],
      expected: userWith((u) => (u.displayName = 'URN')),
    },
    {
      name: 'read-only keys in a path-less value are ignored',
      operations: [
        {
          op: 'replace',
          value: { id: 'someone-else', schemas: ['x'], meta: { version: 'W/"1"' }, displayName: 'D' },
        },
      ],
      expected: userWith((u) => (u.displayName = 'D')),
    },
  ])('$name', ({ operations, expected, doc }) => {
    expect(patchUser(patchBody(operations), doc)).toEqual(expected);
  });
});

describe('user PATCH: emails', () => {
  const two = userWith((u) => {
    u.emails = [
      { value: 'work@example.com', type: 'work', primary: true },
      { value: 'home@example.com', type: 'home' },
    ];
  });
  it.each<Case<UserDoc>>([
    {
      name: 'add appends a new address',
      doc: two,
      operations: [{ op: 'add', path: 'emails', value: [{ value: 'other@example.com', type: 'other' }] }],
      expected: userWith((u) => u.emails.push({ value: 'other@example.com', type: 'other' }), two),
    },
    {
      name: 'add merges into an existing address, compared case-insensitively',
      doc: two,
      operations: [{ op: 'add', path: 'emails', value: [{ value: 'HOME@example.com', type: 'personal' }] }],
      expected: userWith((u) => (u.emails[1] = { value: 'HOME@example.com', type: 'personal' }), two),
    },
    {
      name: 'a new primary address takes the primary flag from the others',
      doc: two,
      operations: [{ op: 'add', path: 'emails', value: [{ value: 'new@example.com', primary: 'True' }] }],
      expected: userWith((u) => {
        u.emails[0]!.primary = false;
        u.emails.push({ value: 'new@example.com', primary: true });
      }, two),
    },
    {
      name: 'replace replaces the list',
      doc: two,
      operations: [{ op: 'replace', path: 'emails', value: [{ value: 'only@example.com', type: 'work' }] }],
      expected: userWith((u) => (u.emails = [{ value: 'only@example.com', type: 'work' }]), two),
    },
    {
      name: 'remove without a value clears the list',
      doc: two,
      operations: [{ op: 'remove', path: 'emails' }],
      expected: userWith((u) => (u.emails = []), two),
    },
    {
      name: 'remove with a value array removes those addresses',
      doc: two,
      operations: [{ op: 'remove', path: 'emails', value: [{ value: 'Work@Example.com' }] }],
      expected: userWith((u) => u.emails.shift(), two),
    },
    {
      name: 'remove through a value filter',
      doc: two,
      operations: [{ op: 'remove', path: 'emails[type eq "home"]' }],
      expected: userWith((u) => u.emails.pop(), two),
    },
    {
      name: 'replace a sub-attribute through a value filter, case-insensitively',
      doc: two,
      operations: [{ op: 'replace', path: 'Emails[Type EQ "HOME"].type', value: 'personal' }],
      expected: userWith((u) => (u.emails[1]!.type = 'personal'), two),
    },
    {
      name: 'setting primary through a filter clears it elsewhere',
      doc: two,
      operations: [{ op: 'replace', path: 'emails[type eq "home"].primary', value: true }],
      expected: userWith((u) => {
        u.emails[0]!.primary = false;
        u.emails[1]!.primary = true;
      }, two),
    },
    {
      name: 'replace a whole element through a value filter',
      doc: two,
      operations: [
        { op: 'replace', path: 'emails[type eq "home"]', value: { value: 'h2@example.com', type: 'home' } },
      ],
      expected: userWith((u) => (u.emails[1] = { value: 'h2@example.com', type: 'home' }), two),
    },
    {
      name: 'a filter value that looks like a forbidden name is data',
      doc: userWith((u) => (u.emails = [{ value: 'constructor@example.com' }])),
      operations: [{ op: 'remove', path: 'emails[value eq "constructor@example.com"]' }],
      expected: userWith((u) => (u.emails = [])),
    },
  ])('$name', ({ operations, expected, doc }) => {
    expect(patchUser(patchBody(operations), doc)).toEqual(expected);
  });
});

describe('user PATCH: phoneNumbers, as emails', () => {
  const two = userWith((u) => {
    u.phoneNumbers = [
      { value: '+1 555 0100', type: 'work', primary: true },
      { value: '+1 555 0199', type: 'mobile' },
    ];
  });
  it.each<Case<UserDoc>>([
    {
      name: 'add appends a new number',
      doc: two,
      operations: [{ op: 'add', path: 'phoneNumbers', value: [{ value: '+1 555 0142', type: 'fax' }] }],
      expected: userWith((u) => u.phoneNumbers.push({ value: '+1 555 0142', type: 'fax' }), two),
    },
    {
      name: 'add through a value path creates the number when none matches (Entra)',
      operations: [{ op: 'Add', path: 'phoneNumbers[type eq "mobile"].value', value: '+1 555 0199' }],
      expected: userWith((u) => (u.phoneNumbers = [{ type: 'mobile', value: '+1 555 0199' }])),
    },
    {
      name: 'replace through a value path changes the matching number only (Entra)',
      doc: two,
      operations: [{ op: 'Replace', path: 'phoneNumbers[type eq "work"].value', value: '+1 555 0123' }],
      expected: userWith((u) => (u.phoneNumbers[0]!.value = '+1 555 0123'), two),
    },
    {
      name: 'remove through a value path',
      doc: two,
      operations: [{ op: 'remove', path: 'phoneNumbers[type eq "mobile"]' }],
      expected: userWith((u) => u.phoneNumbers.pop(), two),
    },
    {
      name: 'remove without a value clears the list',
      doc: two,
      operations: [{ op: 'remove', path: 'phoneNumbers' }],
      expected: userWith((u) => (u.phoneNumbers = []), two),
    },
    {
      name: 'a path-less replace with a phoneNumbers key replaces the list',
      doc: two,
      operations: [{ op: 'replace', value: { phoneNumbers: [{ value: '+47 22 00 00 00', type: 'home' }] } }],
      expected: userWith((u) => (u.phoneNumbers = [{ value: '+47 22 00 00 00', type: 'home' }]), two),
    },
    {
      name: "a path-less replace with Entra's value-path key",
      doc: two,
      operations: [{ op: 'replace', value: { 'phoneNumbers[type eq "work"].value': '+1 555 0123' } }],
      expected: userWith((u) => (u.phoneNumbers[0]!.value = '+1 555 0123'), two),
    },
    {
      name: 'setting primary through a filter clears it elsewhere',
      doc: two,
      operations: [{ op: 'replace', path: 'phoneNumbers[type eq "mobile"].primary', value: 'True' }],
      expected: userWith((u) => {
        u.phoneNumbers[0]!.primary = false;
        u.phoneNumbers[1]!.primary = true;
      }, two),
    },
    {
      name: 'emails are left as they are',
      doc: two,
      operations: [{ op: 'remove', path: 'phoneNumbers[type eq "work"]' }],
      expected: userWith((u) => u.phoneNumbers.shift(), two),
    },
  ])('$name', ({ operations, expected, doc }) => {
    expect(patchUser(patchBody(operations), doc)).toEqual(expected);
  });
});

describe('user PATCH: enterprise and other extension attributes', () => {
  it.each<Case<UserDoc>>([
    {
      name: 'an enterprise attribute by its URN path',
      operations: [{ op: 'Replace', path: `${enterpriseUrn}:employeeNumber`, value: '42' }],
      expected: userWith((u) => (u.enterprise = { employeeNumber: '42', department: 'Tour Operations' })),
    },
    {
      name: 'the attribute name is case-insensitive and keeps the stored spelling',
      operations: [{ op: 'replace', path: `${enterpriseUrn.toUpperCase()}:EMPLOYEENUMBER`, value: '43' }],
      expected: userWith((u) => (u.enterprise = { employeeNumber: '43', department: 'Tour Operations' })),
    },
    {
      name: 'manager as a bare id (Entra) becomes the complex value {value} (RFC 7643 §4.3)',
      operations: [
        { op: 'Add', path: `${enterpriseUrn}:manager`, value: '26118915-6090-4610-87e4-49d8ca9f808d' },
      ],
      expected: userWith(
        (u) =>
          (u.enterprise = { ...u.enterprise, manager: { value: '26118915-6090-4610-87e4-49d8ca9f808d' } }),
      ),
    },
    {
      name: 'manager as an object keeps its value only ($ref and displayName are derived)',
      operations: [
        {
          op: 'replace',
          path: `${enterpriseUrn}:manager`,
          value: { value: 'm-2', $ref: 'https://elsewhere/Users/m-2', displayName: 'Boss' },
        },
      ],
      expected: userWith((u) => (u.enterprise = { ...u.enterprise, manager: { value: 'm-2' } })),
    },
    {
      name: 'manager in a path-less enterprise value, and an empty manager id removes it',
      operations: [
        { op: 'replace', value: { [enterpriseUrn]: { manager: 'm-3' } } },
        { op: 'replace', path: `${enterpriseUrn}:manager`, value: '' },
      ],
      expected: userWith((u) => (u.enterprise = { ...u.enterprise })),
    },
    {
      name: 'a sub-attribute of an enterprise attribute',
      operations: [{ op: 'add', path: `${enterpriseUrn}:manager.value`, value: 'm-1' }],
      expected: userWith((u) => (u.enterprise = { ...u.enterprise, manager: { value: 'm-1' } })),
    },
    {
      name: 'unknown enterprise attributes are kept',
      operations: [{ op: 'add', path: `${enterpriseUrn}:badgeColour`, value: 'blue' }],
      expected: userWith((u) => (u.enterprise = { ...u.enterprise, badgeColour: 'blue' })),
    },
    {
      name: 'the extension URN as path with an object value',
      operations: [{ op: 'add', path: enterpriseUrn, value: { division: 'North', Department: 'Ops' } }],
      expected: userWith(
        (u) => (u.enterprise = { employeeNumber: '701984', department: 'Ops', division: 'North' }),
      ),
    },
    {
      name: 'a path-less value with the extension URN as key',
      operations: [{ op: 'replace', value: { [enterpriseUrn]: { organization: 'Contoso' } } }],
      expected: userWith((u) => (u.enterprise = { ...u.enterprise, organization: 'Contoso' })),
    },
    {
      name: 'remove an enterprise attribute',
      operations: [{ op: 'remove', path: `${enterpriseUrn}:department` }],
      expected: userWith((u) => (u.enterprise = { employeeNumber: '701984' })),
    },
    {
      name: 'remove the whole extension',
      operations: [{ op: 'remove', path: enterpriseUrn }],
      expected: userWith((u) => (u.enterprise = {})),
    },
    {
      name: 'other extension URNs are ignored without error',
      operations: [
        { op: 'add', path: 'urn:example:params:scim:schemas:extension:custom:2.0:User:badge', value: 7 },
        { op: 'replace', value: { 'urn:ietf:params:scim:schemas:extension:acme:2.0:User:level': 'gold' } },
      ],
      expected: user,
    },
  ])('$name', ({ operations, expected, doc }) => {
    expect(patchUser(patchBody(operations), doc)).toEqual(expected);
  });
});

describe('user PATCH: invalid bodies are SCIM errors', () => {
  it.each<{ name: string; body: unknown; scimType: ScimType; detail: string }>([
    { name: 'not an object', body: null, scimType: 'invalidSyntax', detail: 'must be a JSON object' },
    { name: 'an array', body: [], scimType: 'invalidSyntax', detail: 'must be a JSON object' },
    {
      name: 'schemas missing',
      body: { Operations: [] },
      scimType: 'invalidSyntax',
      detail: `'schemas' must be an array containing '${patchOpSchema}'`,
    },
    {
      name: 'the wrong schema',
      body: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], Operations: [] },
      scimType: 'invalidSyntax',
      detail: "'schemas' must be an array",
    },
    {
      name: 'Operations missing',
      body: { schemas: [patchOpSchema] },
      scimType: 'invalidSyntax',
      detail: "'Operations' must be an array, got nothing",
    },
    {
      name: 'Operations an object',
      body: { schemas: [patchOpSchema], Operations: { op: 'add' } },
      scimType: 'invalidSyntax',
      detail: "'Operations' must be an array",
    },
    {
      name: 'an operation that is not an object',
      body: patchBody(['replace']),
      scimType: 'invalidSyntax',
      detail: 'Operations[0] must be an object, got "replace"',
    },
    {
      name: 'an unknown op',
      body: patchBody([{ op: 'move', path: 'userName', value: 'x' }]),
      scimType: 'invalidSyntax',
      detail: `Operations[0].op must be 'add', 'replace' or 'remove', got "move"`,
    },
    {
      name: 'op missing',
      body: patchBody([{ path: 'userName', value: 'x' }]),
      scimType: 'invalidSyntax',
      detail: 'got nothing',
    },
    {
      name: 'a path that is not a string',
      body: patchBody([{ op: 'replace', path: 42, value: 'x' }]),
      scimType: 'invalidSyntax',
      detail: 'Operations[0].path must be a string, got 42',
    },
    {
      name: 'an empty path',
      body: patchBody([{ op: 'replace', path: ' ', value: 'x' }]),
      scimType: 'invalidPath',
      detail: 'Operations[0].path is empty',
    },
    {
      name: 'add without a value',
      body: patchBody([{ op: 'add', path: 'displayName' }]),
      scimType: 'invalidValue',
      detail: "Operations[0]: 'add' needs a value",
    },
    {
      name: 'remove without a path',
      body: patchBody([{ op: 'remove', value: { displayName: 'x' } }]),
      scimType: 'noTarget',
      detail: "'remove' needs a path",
    },
    {
      name: 'a path-less replace whose value is not an object',
      body: patchBody([{ op: 'replace', value: false }]),
      scimType: 'invalidValue',
      detail: 'without a path needs an object value, got false',
    },
    {
      name: 'an unknown attribute',
      body: patchBody([{ op: 'replace', path: 'favouriteColour', value: 'x' }]),
      scimType: 'invalidPath',
      detail: "unknown or unsupported attribute 'favouriteColour'",
    },
    {
      name: 'an unknown attribute in a path-less value',
      body: patchBody([{ op: 'replace', value: { shoeSize: 'CEO' } }]),
      scimType: 'invalidPath',
      detail: "unknown or unsupported attribute 'shoeSize'",
    },
    {
      name: 'an unknown name sub-attribute',
      body: patchBody([{ op: 'replace', path: 'name.nickName', value: 'x' }]),
      scimType: 'invalidPath',
      detail: "unknown attribute 'name.nickName'",
    },
    {
      name: 'an enterprise string attribute given a number',
      body: patchBody([{ op: 'replace', path: `${enterpriseUrn}:employeeNumber`, value: 701984 }]),
      scimType: 'invalidValue',
      detail: "'employeeNumber' must be a string, got 701984",
    },
    {
      name: 'a manager that is neither an id nor {value}',
      body: patchBody([{ op: 'replace', path: `${enterpriseUrn}:manager`, value: 42 }]),
      scimType: 'invalidValue',
      detail: 'the manager must be a user id or {"value": <user id>}, got 42',
    },
    {
      name: 'a NUL character in a string',
      body: patchBody([{ op: 'replace', path: 'externalId', value: 'a\u0000b' }]),
      scimType: 'invalidValue',
      detail: 'Operations[0].value must not contain NUL characters',
    },
    {
      name: 'a NUL character in a path-less value',
      body: patchBody([{ op: 'replace', value: { displayName: 'x\u0000' } }]),
      scimType: 'invalidValue',
      detail: 'Operations[0].value.displayName must not contain NUL characters',
    },
    {
      name: 'a lone surrogate in an enterprise attribute',
      body: patchBody([{ op: 'add', path: `${enterpriseUrn}:department`, value: 'R&D \ud83d' }]),
      scimType: 'invalidValue',
      detail: 'must be valid Unicode',
    },
    {
      name: 'an unknown email sub-attribute',
      body: patchBody([{ op: 'add', path: 'emails', value: [{ value: 'a@b.c', label: 'x' }] }]),
      scimType: 'invalidPath',
      detail: "unknown email attribute 'label'",
    },
    {
      name: 'name.givenName given a number',
      body: patchBody([{ op: 'replace', path: 'name.givenName', value: 42 }]),
      scimType: 'invalidValue',
      detail: "'name.givenName' must be a string, got 42",
    },
    {
      name: 'name given a string',
      body: patchBody([{ op: 'replace', path: 'name', value: 'Babs Jensen' }]),
      scimType: 'invalidValue',
      detail: "'name' must be an object",
    },
    {
      name: 'active given "maybe"',
      body: patchBody([{ op: 'replace', path: 'active', value: 'maybe' }]),
      scimType: 'invalidValue',
      detail: `'active' must be true or false, got "maybe"`,
    },
    {
      name: 'active removed',
      body: patchBody([{ op: 'remove', path: 'active' }]),
      scimType: 'invalidValue',
      detail: 'active is required',
    },
    {
      name: 'userName empty',
      body: patchBody([{ op: 'replace', path: 'userName', value: '  ' }]),
      scimType: 'invalidValue',
      detail: "'userName' must be a non-empty string",
    },
    {
      name: 'userName null',
      body: patchBody([{ op: 'replace', value: { userName: null } }]),
      scimType: 'invalidValue',
      detail: "'userName' must be a non-empty string, got null",
    },
    {
      name: 'userName removed',
      body: patchBody([{ op: 'remove', path: 'userName' }]),
      scimType: 'invalidValue',
      detail: 'userName is required and cannot be removed',
    },
    {
      name: 'a read-only attribute by path',
      body: patchBody([{ op: 'replace', path: 'id', value: 'x' }]),
      scimType: 'mutability',
      detail: "'id' is read-only",
    },
    {
      name: 'an unknown phone number sub-attribute',
      body: patchBody([{ op: 'add', path: 'phoneNumbers', value: [{ value: '+1 555', extension: '12' }] }]),
      scimType: 'invalidPath',
      detail: "unknown phone number attribute 'extension'",
    },
    {
      name: 'a phone number given as a number',
      body: patchBody([{ op: 'replace', path: 'phoneNumbers[type eq "work"].value', value: 5550100 }]),
      scimType: 'invalidValue',
      detail: '\'phoneNumbers[type eq "work"].value\' must be a non-empty string, got 5550100',
    },
    {
      name: 'a phone number without a number',
      body: patchBody([{ op: 'add', path: 'phoneNumbers', value: [{ type: 'mobile' }] }]),
      scimType: 'invalidValue',
      detail: "a phone number needs a string 'value'",
    },
    {
      name: 'a dotted phoneNumbers path without a filter',
      body: patchBody([{ op: 'replace', path: 'phoneNumbers.value', value: '+1 555' }]),
      scimType: 'invalidPath',
      detail: 'needs a value filter, such as \'phoneNumbers[type eq "work"].value\'',
    },
    {
      name: 'a filter that cannot create a missing phone number',
      body: patchBody([{ op: 'replace', path: 'phoneNumbers[value co "0100"].type', value: 'work' }]),
      scimType: 'noTarget',
      detail: 'no phone number matches',
    },
    {
      name: 'emails given a number',
      body: patchBody([{ op: 'add', path: 'emails', value: 5 }]),
      scimType: 'invalidValue',
      detail: "'emails' must be an array, got 5",
    },
    {
      name: 'an email without an address',
      body: patchBody([{ op: 'add', path: 'emails', value: [{ type: 'work' }] }]),
      scimType: 'invalidValue',
      detail: "an email needs a string 'value'",
    },
    {
      name: 'a dotted emails path without a filter',
      body: patchBody([{ op: 'replace', path: 'emails.value', value: 'a@b.c' }]),
      scimType: 'invalidPath',
      detail: 'needs a value filter',
    },
    {
      name: 'an unclosed value filter',
      body: patchBody([{ op: 'replace', path: 'emails[type eq "work".value', value: 'a@b.c' }]),
      scimType: 'invalidPath',
      detail: "has a '[' without a matching ']'",
    },
    {
      name: 'an unsupported operator in a value filter',
      body: patchBody([{ op: 'replace', path: 'emails[type ne "work"].value', value: 'a@b.c' }]),
      scimType: 'invalidFilter',
      detail:
        "the filter in the path 'emails[type ne \"work\"].value': unsupported operator 'ne' at position 6",
    },
    {
      name: 'a value filter on a single-valued attribute',
      body: patchBody([{ op: 'replace', path: 'userName[value eq "x"]', value: 'x' }]),
      scimType: 'invalidPath',
      detail: "'userName' does not support a value filter",
    },
    {
      name: 'a sub-attribute of a filtered email that does not exist',
      body: patchBody([{ op: 'replace', path: 'emails[type eq "work"].label', value: 'x' }]),
      scimType: 'invalidPath',
      detail: 'unknown attribute \'emails[type eq "work"].label\'',
    },
    {
      name: 'a filter that cannot create a missing email',
      body: patchBody([{ op: 'replace', path: 'emails[value co "nobody"].value', value: 'a@b.c' }]),
      scimType: 'noTarget',
      detail: 'no email matches',
    },
    {
      name: 'the Group schema on a user',
      body: patchBody([
        { op: 'replace', path: 'urn:ietf:params:scim:schemas:core:2.0:Group:displayName', value: 'x' },
      ]),
      scimType: 'invalidPath',
      detail: 'is not a schema of this resource',
    },
    {
      name: 'a malformed path',
      body: patchBody([{ op: 'replace', path: 'name..givenName', value: 'x' }]),
      scimType: 'invalidPath',
      detail: "'name..givenName' has no attribute name after '.'",
    },
    {
      name: 'a value filter on an enterprise attribute',
      body: patchBody([{ op: 'replace', path: `${enterpriseUrn}:manager[value eq "x"]`, value: 'y' }]),
      scimType: 'invalidPath',
      detail: "'manager' does not support a value filter",
    },
    {
      name: 'values nested too deeply',
      body: patchBody([
        { op: 'add', path: `${enterpriseUrn}:deep`, value: JSON.parse('['.repeat(40) + ']'.repeat(40)) },
      ]),
      scimType: 'invalidValue',
      detail: 'nested more than 32 levels deep',
    },
  ])('$name', ({ body, scimType, detail }) => {
    const error = scimErrorOf(() => applyUserPatch(deepFreeze(structuredClone(user)), body));
    expect(error.status).toBe(400);
    expect(error.scimType).toBe(scimType);
    expect(error.detail).toContain(detail);
  });

  it('applies nothing when a later operation fails', () => {
    const input = deepFreeze(structuredClone(user));
    const body = patchBody([
      { op: 'replace', path: 'active', value: false },
      { op: 'replace', path: 'active', value: 'maybe' },
    ]);
    expect(() => applyUserPatch(input, body)).toThrow(ScimError);
    expect(input).toEqual(user);
  });
});

describe('prototype pollution: forbidden keys and path segments are 400 invalidValue', () => {
  afterEach(() => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  // JSON.parse, as a request body is parsed: an object literal's __proto__ would set the prototype instead.
  it.each<[string, string]>([
    ['a __proto__ key in a path-less value', '{"op":"replace","value":{"__proto__":{"polluted":true}}}'],
    [
      'a constructor key in a path-less value',
      '{"op":"replace","value":{"constructor":{"prototype":{"polluted":true}}}}',
    ],
    [
      'a dotted __proto__ key in a path-less value',
      '{"op":"replace","value":{"name.__proto__.polluted":true}}',
    ],
    ['a __proto__ path', '{"op":"replace","path":"__proto__.polluted","value":true}'],
    ['a constructor.prototype path', '{"op":"add","path":"constructor.prototype.polluted","value":true}'],
    ['a __PROTO__ path in upper case', '{"op":"replace","path":"__PROTO__","value":{"polluted":true}}'],
    ['name.__proto__', '{"op":"replace","path":"name.__proto__","value":{"polluted":true}}'],
    [
      'a filtered email sub-attribute',
      '{"op":"replace","path":"emails[type eq \\"work\\"].__proto__","value":1}',
    ],
    [
      'an enterprise attribute named __proto__',
      `{"op":"add","path":"${enterpriseUrn}:__proto__","value":{"polluted":true}}`,
    ],
    [
      'an enterprise sub-attribute named prototype',
      `{"op":"add","path":"${enterpriseUrn}:manager.prototype","value":1}`,
    ],
    [
      'a __proto__ key inside the extension object',
      `{"op":"add","path":"${enterpriseUrn}","value":{"__proto__":{"polluted":true}}}`,
    ],
    [
      'a __proto__ key nested in an enterprise value',
      `{"op":"add","path":"${enterpriseUrn}:manager","value":{"value":"m","__proto__":{"polluted":true}}}`,
    ],
    [
      'a __proto__ key inside an email',
      '{"op":"add","path":"emails","value":[{"value":"a@b.c","__proto__":{"polluted":true}}]}',
    ],
  ])('user: %s', (_name, operation) => {
    const body = patchBody([JSON.parse(operation)]);
    const error = scimErrorOf(() => applyUserPatch(deepFreeze(structuredClone(user)), body));
    expect(error.scimType).toBe('invalidValue');
  });

  it('user: a __proto__ key at the top of the body', () => {
    const body = JSON.parse(`{"schemas":["${patchOpSchema}"],"Operations":[],"__proto__":{"polluted":true}}`);
    expect(scimErrorOf(() => applyUserPatch(user, body)).scimType).toBe('invalidValue');
  });

  it.each<[string, string]>([
    ['a __proto__ key in a path-less value', '{"op":"replace","value":{"__proto__":{"polluted":true}}}'],
    ['a constructor path', '{"op":"replace","path":"constructor","value":{"prototype":{"polluted":true}}}'],
    ['a filtered members path', '{"op":"remove","path":"members[value eq \\"x\\"].__proto__"}'],
    [
      'a __proto__ key in a member',
      '{"op":"add","path":"members","value":[{"value":"u","__proto__":{"polluted":true}}]}',
    ],
    [
      'a constructor key in a member (other unknown keys are ignored)',
      '{"op":"add","path":"members","value":[{"value":"u","constructor":{"prototype":{"polluted":true}}}]}',
    ],
    [
      'a prototype key in a member',
      '{"op":"add","path":"members","value":[{"value":"u","Prototype":{"polluted":true}}]}',
    ],
  ])('group: %s', (_name, operation) => {
    const body = patchBody([JSON.parse(operation)]);
    const error = scimErrorOf(() => applyGroupPatch(deepFreeze(structuredClone(group)), body));
    expect(error.scimType).toBe('invalidValue');
  });
});

describe('group PATCH: request bodies that Okta and Entra document', () => {
  const okta = 'Okta SCIM 2.0 protocol reference';
  const tutorial =
    'Microsoft Learn, "Tutorial: Develop and plan provisioning for a SCIM endpoint in Microsoft Entra ID"';
  const entra = 'Microsoft Entra provisioning, as integrators met it (issue 16)';
  const rfc = 'RFC 7643 §8.4, a member as a Group represents it';
  it.each<Case<GroupDoc>>([
    {
      name: `${okta}, update a group name: path-less replace with {id, displayName}`,
      operations: [
        { op: 'replace', value: { id: 'abf4dd94-a4c0-4f67-89c9-76b03340cb9b', displayName: 'Test SCIMv2' } },
      ],
      expected: groupWith((g) => (g.displayName = 'Test SCIMv2')),
    },
    {
      name: `${okta}, add group members`,
      operations: [
        {
          op: 'add',
          path: 'members',
          value: [{ value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', display: 'test.user@okta.local' }],
        },
      ],
      expected: groupWith((g) => g.members.push('23a35c27-23d3-4c03-b4c5-6443c09e7173')),
    },
    {
      name: `${okta}, remove a group member: members[value eq "..."]`,
      operations: [{ op: 'remove', path: 'members[value eq "89bb1940-b905-4575-9e7f-6f887cfb368e"]' }],
      expected: groupWith((g) => (g.members = ['f648f8d5ea4e4cd38e9c'])),
    },
    {
      name: `${tutorial}, Update Group [Add Members]`,
      doc: groupWith((g) => (g.members = [])),
      operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: 'f648f8d5ea4e4cd38e9c' }] }],
      expected: groupWith((g) => (g.members = ['f648f8d5ea4e4cd38e9c'])),
    },
    {
      name: `${tutorial}, Update Group [Remove Members]: a value array`,
      operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: 'f648f8d5ea4e4cd38e9c' }] }],
      expected: groupWith((g) => (g.members = ['89bb1940-b905-4575-9e7f-6f887cfb368e'])),
    },
    {
      name: `${tutorial}, Update Group [Non-member attributes]: rename`,
      operations: [
        {
          op: 'Replace',
          path: 'displayName',
          value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName',
        },
      ],
      expected: groupWith((g) => (g.displayName = '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName')),
    },
    {
      name: `${entra}, add a member with its displayName`,
      operations: [
        {
          op: 'Add',
          path: 'members',
          value: [{ value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', displayName: 'Test User' }],
        },
      ],
      expected: groupWith((g) => g.members.push('23a35c27-23d3-4c03-b4c5-6443c09e7173')),
    },
    {
      name: `${entra}, remove a member named by value and displayName`,
      operations: [
        {
          op: 'Remove',
          path: 'members',
          value: [{ value: 'f648f8d5ea4e4cd38e9c', displayName: 'Test User' }],
        },
      ],
      expected: groupWith((g) => (g.members = ['89bb1940-b905-4575-9e7f-6f887cfb368e'])),
    },
    {
      name: `${entra}, path-less add of members with displayName`,
      operations: [
        {
          op: 'Add',
          value: { members: [{ value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', displayName: 'Test User' }] },
        },
      ],
      expected: groupWith((g) => g.members.push('23a35c27-23d3-4c03-b4c5-6443c09e7173')),
    },
    {
      name: `${rfc}: value, $ref, display and type`,
      operations: [
        {
          op: 'add',
          path: 'members',
          value: [
            {
              value: '2819c223-7f76-453a-919d-413861904646',
              $ref: 'https://example.com/v2/Users/2819c223-7f76-453a-919d-413861904646',
              display: 'Babs Jensen',
              type: 'User',
            },
          ],
        },
      ],
      expected: groupWith((g) => g.members.push('2819c223-7f76-453a-919d-413861904646')),
    },
    {
      name: 'member keys in any case, an unknown one among them',
      operations: [
        {
          op: 'replace',
          path: 'members',
          value: [{ VALUE: 'x', DisplayName: 'X', Display: 'X', TYPE: 'User', role: 'owner' }],
        },
      ],
      expected: groupWith((g) => (g.members = ['x'])),
    },
  ])('$name', ({ operations, expected, doc }) => {
    expect(patchGroup(patchBody(operations), doc)).toEqual(expected);
  });
});

describe('group PATCH: members and attributes', () => {
  const [a, b] = group.members as [string, string];
  it.each<Case<GroupDoc>>([
    { name: 'empty Operations change nothing', operations: [], expected: group },
    {
      name: 'adding a member already there is a no-op',
      operations: [{ op: 'add', path: 'members', value: [{ value: a }] }],
      expected: group,
    },
    {
      name: 'adding keeps order and drops duplicates within the request',
      operations: [{ op: 'add', path: 'members', value: [{ value: 'c' }, { value: b }, { value: 'c' }] }],
      expected: groupWith((g) => (g.members = [a, b, 'c'])),
    },
    {
      name: 'removing a member who is absent is a no-op',
      operations: [
        { op: 'remove', path: 'members[value eq "absent"]' },
        { op: 'remove', path: 'members', value: [{ value: 'also-absent' }] },
      ],
      expected: group,
    },
    {
      name: 'member ids compare case-exactly in a filter',
      operations: [{ op: 'remove', path: `members[value eq "${a.toUpperCase()}"]` }],
      expected: group,
    },
    {
      name: 'remove members without a value removes all',
      operations: [{ op: 'remove', path: 'members' }],
      expected: groupWith((g) => (g.members = [])),
    },
    {
      name: 'replace members replaces all',
      operations: [
        { op: 'replace', path: 'members', value: [{ value: 'x' }, { value: 'y' }, { value: 'x' }] },
      ],
      expected: groupWith((g) => (g.members = ['x', 'y'])),
    },
    {
      name: 'replace members with an empty array removes all',
      operations: [{ op: 'replace', path: 'members', value: [] }],
      expected: groupWith((g) => (g.members = [])),
    },
    {
      name: 'path-less add with members',
      operations: [{ op: 'add', value: { members: [{ value: 'z' }] } }],
      expected: groupWith((g) => g.members.push('z')),
    },
    {
      name: 'externalId replace and remove',
      operations: [
        { op: 'replace', path: 'externalId', value: 'e-2' },
        { op: 'remove', path: 'EXTERNALID' },
      ],
      expected: groupWith((g) => delete g.externalId),
    },
    {
      name: 'the core Group schema URN as a path prefix',
      operations: [
        { op: 'replace', path: 'urn:ietf:params:scim:schemas:core:2.0:Group:displayName', value: 'G2' },
      ],
      expected: groupWith((g) => (g.displayName = 'G2')),
    },
    {
      name: 'a member id that looks like a forbidden name is data',
      doc: groupWith((g) => (g.members = ['constructor'])),
      operations: [{ op: 'remove', path: 'members[value eq "constructor"]' }],
      expected: groupWith((g) => (g.members = [])),
    },
  ])('$name', ({ operations, expected, doc }) => {
    expect(patchGroup(patchBody(operations), doc)).toEqual(expected);
  });

  it.each<{ name: string; operations: unknown[]; scimType: ScimType; detail: string }>([
    {
      name: 'a member id that is not a string',
      operations: [{ op: 'add', path: 'members', value: [{ value: 42 }] }],
      scimType: 'invalidValue',
      detail: "a member's 'value' must be a user id string, got 42",
    },
    {
      name: 'a member that is not an object',
      operations: [{ op: 'add', path: 'members', value: ['u1'] }],
      scimType: 'invalidValue',
      detail: 'a member must be an object, got "u1"',
    },
    {
      name: 'members given a string',
      operations: [{ op: 'add', path: 'members', value: 'u1' }],
      scimType: 'invalidValue',
      detail: "'members' must be an array",
    },
    {
      name: 'a member with a displayName but no value',
      operations: [{ op: 'add', path: 'members', value: [{ displayName: 'Test User' }] }],
      scimType: 'invalidValue',
      detail: "a member's 'value' must be a user id string, got nothing",
    },
    {
      name: 'displayName removed',
      operations: [{ op: 'remove', path: 'displayName' }],
      scimType: 'invalidValue',
      detail: 'displayName is required',
    },
    {
      name: 'displayName given a number',
      operations: [{ op: 'replace', value: { displayName: 7 } }],
      scimType: 'invalidValue',
      detail: "'displayName' must be a non-empty string, got 7",
    },
    {
      name: 'an unknown attribute',
      operations: [{ op: 'replace', path: 'description', value: 'x' }],
      scimType: 'invalidPath',
      detail: "unknown or unsupported attribute 'description'",
    },
    {
      name: 'add to a filtered members path',
      operations: [{ op: 'add', path: 'members[value eq "x"]', value: [{ value: 'x' }] }],
      scimType: 'invalidPath',
      detail: "'add' cannot target a filtered path",
    },
    {
      name: 'an unsupported members filter',
      operations: [{ op: 'remove', path: 'members[value eq "x" or value eq "y"]' }],
      scimType: 'invalidFilter',
      detail: "unsupported operator 'or'",
    },
    {
      name: 'a read-only attribute by path',
      operations: [{ op: 'replace', path: 'meta', value: {} }],
      scimType: 'mutability',
      detail: "'meta' is read-only",
    },
  ])('$name', ({ operations, scimType, detail }) => {
    const error = scimErrorOf(() =>
      applyGroupPatch(deepFreeze(structuredClone(group)), patchBody(operations)),
    );
    expect(error.status).toBe(400);
    expect(error.scimType).toBe(scimType);
    expect(error.detail).toContain(detail);
  });
});

describe('core attributes the service does not store', () => {
  it.each([
    ['title', { op: 'replace', path: 'title', value: 'Engineer' }],
    [
      'addresses with a URN prefix',
      {
        op: 'add',
        path: 'urn:ietf:params:scim:schemas:core:2.0:User:addresses[type eq "work"].locality',
        value: 'Oslo',
      },
    ],
    [
      'preferredLanguage in a path-less value',
      { op: 'replace', value: { preferredLanguage: 'en-US', 'name.givenName': 'Ada' } },
    ],
  ])('accepts and drops %s (Microsoft Entra default attribute mappings)', (_case, operation) => {
    const doc: UserDoc = {
      userName: 'ada@example.com',
      name: {},
      emails: [],
      phoneNumbers: [],
      active: true,
      enterprise: {},
    };
    const next = applyUserPatch(doc, { schemas: [patchOpSchema], Operations: [operation] });
    expect(next.userName).toBe('ada@example.com');
    expect(JSON.stringify(next)).not.toMatch(/Engineer|Oslo|en-US/);
  });
});
