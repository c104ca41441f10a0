import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { body, json, startScim, type ScimUnderTest } from './fixture';

/**
 * SCIM list totals, whichever way they are found: counted, or taken from a page that is not full (the last
 * one), which spares identity providers' lookups a statement.
 */

const userSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
const baseUrl = 'https://api.example.com/scim/v2';
let scim: ScimUnderTest | undefined;
const userNames = ['ann', 'bob', 'cat', 'dan', 'eve'].map((name) => `${name}@paging.example`);

beforeAll(async () => {
  scim = await startScim('paging');
  for (const userName of userNames) {
    await scim.client.createUser(
      { bodyJson: body({ schemas: [userSchema], userName }), baseUrl },
      { teamId: scim.teamId },
    );
  }
}, 180_000);

afterAll(async () => {
  await scim?.stop();
});

describe('SCIM user lists', () => {
  it.each([
    { query: 'a first page that is not full', startIndex: 1, count: 100, total: 5, names: userNames },
    { query: 'a last page that is not full', startIndex: 4, count: 100, total: 5, names: userNames.slice(3) },
    { query: 'a full page', startIndex: 2, count: 2, total: 5, names: userNames.slice(1, 3) },
    { query: 'a full last page', startIndex: 4, count: 2, total: 5, names: userNames.slice(3) },
    { query: 'a page past the end', startIndex: 9, count: 2, total: 5, names: [] },
    { query: 'only the total (count 0)', startIndex: 1, count: 0, total: 5, names: [] },
    { query: 'an eq lookup', filter: `userName eq "${userNames[2]}"`, total: 1, names: [userNames[2]] },
    { query: 'a filter matching nobody', filter: 'userName eq "nobody@paging.example"', total: 0, names: [] },
    {
      query: 'a filter past its matches',
      filter: 'userName co "an"',
      startIndex: 2,
      count: 10,
      total: 2, // ann, dan
      names: [userNames[3]],
    },
  ])('give the right totalResults for $query', async ({ filter, startIndex, count, total, names }) => {
    const reply = await scim!.client.listUsers(
      { filter, startIndex: startIndex ?? 0, count: count ?? -1, baseUrl }, // 0 and -1: not given
      { teamId: scim!.teamId },
    );
    const page = json(reply.bodyJson);
    expect(page).toMatchObject({ totalResults: total, itemsPerPage: names.length });
    expect(page.Resources.map((user: { userName: string }) => user.userName)).toEqual(names);
  });
});
