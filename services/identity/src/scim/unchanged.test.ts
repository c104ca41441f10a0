import { describe, expect, it } from 'vitest';
import { storesSameGroup } from './groups';
import type { GroupDoc, UserDoc } from './patch';
import { storesSameUser } from './users';

/** Whether a PUT or PATCH result stores what is already stored; if so, the write is skipped. */

const user: UserDoc = {
  userName: 'Ada.Lovelace@example.com',
  externalId: '00u1',
  name: { givenName: 'Ada', familyName: 'Lovelace' },
  displayName: 'Ada Lovelace',
  emails: [
    { value: 'ada@example.com', type: 'work', primary: true },
    { value: 'ada@home.example', type: 'home' },
  ],
  phoneNumbers: [
    { value: '+1 555 0100', type: 'work' },
    { value: '+1 555 0199', type: 'mobile', primary: true },
  ],
  active: true,
  enterprise: { department: 'Engines', manager: { value: '89bb1940-b905-4575-9e7f-6f887cfb368e' } },
};

const member = '89bb1940-b905-4575-9e7f-6f887cfb368e';
const another = 'f648f8d5-ea4e-4cd3-8e9c-0d6c1d2f9a11';
const group: GroupDoc = { displayName: 'Ops', externalId: 'grp-1', members: [member, another] };

describe('storesSameUser', () => {
  const cases: Array<[string, (u: UserDoc) => UserDoc, boolean]> = [
    ['a copy', (u) => structuredClone(u), true],
    [
      'e-mails and enterprise keys in another order (jsonb returns its own)',
      (u) => ({
        ...u,
        emails: u.emails.map(({ primary, type, value }) => ({ type, primary, value })),
        enterprise: { manager: u.enterprise.manager, department: u.enterprise.department },
      }),
      true,
    ],
    [
      'an undefined property where the stored JSON has none',
      (u) => ({
        ...u,
        emails: [
          { ...u.emails[0]!, primary: true },
          { ...u.emails[1]!, primary: undefined },
        ],
      }),
      true,
    ],
    [
      'name with an undefined sub-attribute',
      (u) => ({ ...u, name: { ...u.name, middleName: undefined } }),
      true,
    ],
    ['userName in another case', (u) => ({ ...u, userName: u.userName.toLowerCase() }), false],
    ['e-mails in another order', (u) => ({ ...u, emails: [...u.emails].reverse() }), false],
    [
      'phone number keys in another order',
      (u) => ({
        ...u,
        phoneNumbers: u.phoneNumbers.map(({ primary, type, value }) => ({ primary, value, type })),
      }),
      true,
    ],
    [
      'a phone number changed',
      (u) => ({ ...u, phoneNumbers: [{ ...u.phoneNumbers[0]!, value: '+1 555 0123' }, u.phoneNumbers[1]!] }),
      false,
    ],
    ['phone numbers removed', (u) => ({ ...u, phoneNumbers: [] }), false],
    ['a name sub-attribute added', (u) => ({ ...u, name: { ...u.name, middleName: 'King' } }), false],
    ['externalId removed', ({ externalId: _dropped, ...u }) => u, false],
    ['inactive', (u) => ({ ...u, active: false }), false],
    [
      'another manager',
      (u) => ({ ...u, enterprise: { ...u.enterprise, manager: { value: another } } }),
      false,
    ],
    [
      'an enterprise attribute added',
      (u) => ({ ...u, enterprise: { ...u.enterprise, division: 'R&D' } }),
      false,
    ],
  ];
  it.each(cases)('%s', (_name, change, same) => {
    expect(storesSameUser(user, change(structuredClone(user)))).toBe(same);
  });
});

describe('storesSameGroup', () => {
  const cases: Array<[string, GroupDoc, boolean]> = [
    [
      'members in another order, in upper case, repeated',
      { ...group, members: [another.toUpperCase(), member, member] },
      true,
    ],
    ['displayName in another case', { ...group, displayName: 'OPS' }, false],
    ['externalId removed', { displayName: group.displayName, members: group.members }, false],
    ['a member removed', { ...group, members: [member] }, false],
    ['a member replaced', { ...group, members: [member, '010101c3-4c7d-4d91-9a41-d0e3d5d4a5ff'] }, false],
  ];
  it.each(cases)('%s', (_name, next, same) => {
    expect(storesSameGroup(group, next)).toBe(same);
  });
});
