import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '@costgov/db';
import { freshDb } from '@costgov/testing';
import { filterToSql, groupFilterAttributes, parseFilter, userFilterAttributes } from '../src/scim/filter';

// The SQL that src/scim/filter.test.ts shows filterToSql builds, run on a database: what it selects.
describe(`the generated SQL runs on ${process.env.DATABASE_URL ? 'Postgres' : 'PGlite'}`, () => {
  let db: Db;
  const team = '00000000-0000-4000-8000-000000000001';
  const group = '00000000-0000-4000-8000-0000000000a1';
  const member = '00000000-0000-4000-8000-0000000000b1';

  beforeAll(async () => {
    db = await freshDb('scimfilter');
    await db.exec(`
      CREATE TABLE scim_users (
        id uuid PRIMARY KEY, team_id uuid NOT NULL, user_name text NOT NULL, external_id text,
        given_name text, family_name text, active boolean NOT NULL, emails jsonb NOT NULL DEFAULT '[]',
        phone_numbers jsonb NOT NULL DEFAULT '[]');
      CREATE TABLE scim_groups (id uuid PRIMARY KEY, team_id uuid NOT NULL, display_name text NOT NULL, external_id text);
      CREATE TABLE scim_group_members (group_id uuid NOT NULL, user_id uuid NOT NULL);`);
    const work = '[{"value":"+1 555 0100","type":"work"},{"value":"+1 555 0199","type":"mobile"}]';
    const users: Array<[string, string | null, boolean, string, string]> = [
      ['BJensen@Example.com', 'Ext-1', true, '[{"value":"BJensen@Work.Example.com","type":"work"}]', work],
      ['percent%user', 'ext-1', true, '[]', '[{"value":"+47 22 00 00 00","type":"work"}]'],
      ['under_score', null, false, '[]', '[{"value":"+1 555 0142","type":"mobile"}]'],
      ['back\\slash', null, true, '[{"value":"home@example.org"}]', '[]'],
      ['underXscore', 'x', true, '[]', '[]'],
    ];
    for (const [i, [userName, externalId, active, emails, phoneNumbers]] of users.entries()) {
      await db.query(
        `INSERT INTO scim_users (id, team_id, user_name, external_id, active, emails, phone_numbers)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          i === 0 ? member : `00000000-0000-4000-8000-00000000000${i}`,
          team,
          userName,
          externalId,
          active,
          emails,
          phoneNumbers,
        ],
      );
    }
    await db.query(
      `INSERT INTO scim_groups (id, team_id, display_name) VALUES ($1, $2, 'Group1'), ($3, $2, 'Other')`,
      [group, team, '00000000-0000-4000-8000-0000000000a2'],
    );
    await db.query(`INSERT INTO scim_group_members (group_id, user_id) VALUES ($1, $2)`, [group, member]);
  });
  afterAll(() => db?.close());

  const users = async (filter: string) => {
    const { sql, params } = filterToSql(parseFilter(filter, userFilterAttributes), userFilterAttributes, 2);
    const { rows } = await db.query<{ user_name: string }>(
      `SELECT user_name FROM scim_users WHERE team_id = $1 AND ${sql} ORDER BY user_name COLLATE "C"`,
      [team, ...params],
    );
    return rows.map((row) => row.user_name);
  };

  it.each<[string, string[]]>([
    ['userName eq "bjensen@example.COM"', ['BJensen@Example.com']],
    ['userName co "%"', ['percent%user']],
    ['userName co "_"', ['under_score']],
    ['userName co "\\\\"', ['back\\slash']],
    ['userName sw "B"', ['BJensen@Example.com', 'back\\slash']],
    ['userName sw "under_"', ['under_score']],
    ['emails.value co "WORK.example"', ['BJensen@Example.com']],
    ['emails.value eq "HOME@example.org"', ['back\\slash']],
    ['externalId eq "ext-1"', ['percent%user']],
    ['externalId sw "Ext"', ['BJensen@Example.com']],
    ['externalId eq null', ['back\\slash', 'under_score']],
    ['active eq false', ['under_score']],
    ['active eq true and userName co "score"', ['underXscore']],
    ['emails[type eq "WORK"].value co "work.example"', ['BJensen@Example.com']],
    ['emails[type eq "work" and value sw "bjensen"]', ['BJensen@Example.com']],
    ['emails[type eq null and value sw "home"]', ['back\\slash']],
    // Both comparisons must hold for the same element: no work address is home@example.org.
    ['emails[type eq "work"].value eq "home@example.org"', []],
    ['emails[type eq "home"]', []],
    ['phoneNumbers[type eq "work"].value eq "+1 555 0100"', ['BJensen@Example.com']],
    // The work number of BJensen is not +1 555 0199 (that is the mobile one).
    ['phoneNumbers[type eq "work"].value eq "+1 555 0199"', []],
    ['phoneNumbers.value co "555"', ['BJensen@Example.com', 'under_score']],
    ['phoneNumbers[type eq "mobile"]', ['BJensen@Example.com', 'under_score']],
    ['phoneNumbers[type eq "mobile"] and active eq true', ['BJensen@Example.com']],
    ['phoneNumbers.value eq null', ['back\\slash', 'underXscore']],
  ])('%s', async (filter, expected) => {
    expect(await users(filter)).toEqual(expected);
  });

  it.each<[string, string[]]>([
    ['displayName eq "GROUP1"', ['Group1']],
    [`members.value eq "${member}"`, ['Group1']],
    [`displayName sw "o" and members.value eq "${member}"`, []],
    ['members.value eq null', ['Other']],
    [`members[value eq "${member}"]`, ['Group1']],
    [`members[value eq "${member}"] and displayName sw "O"`, []],
  ])('groups: %s', async (filter, expected) => {
    const { sql, params } = filterToSql(parseFilter(filter, groupFilterAttributes), groupFilterAttributes, 2);
    const { rows } = await db.query<{ display_name: string }>(
      `SELECT display_name FROM scim_groups WHERE team_id = $1 AND ${sql} ORDER BY display_name COLLATE "C"`,
      [team, ...params],
    );
    expect(rows.map((row) => row.display_name)).toEqual(expected);
  });
});
