import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { body, json, startScim, type ScimUnderTest } from './fixture';

/**
 * phoneNumbers as Microsoft Entra's default attribute mapping sends them (`phoneNumbers[type eq "work"].value`,
 * `phoneNumbers[type eq "mobile"].value`) and its validator reads them back: stored, returned, filtered and
 * patched as emails are.
 */

const userSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
const patchSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const baseUrl = 'https://api.example.com/scim/v2';

let scim: ScimUnderTest | undefined;
const ctx = () => ({ teamId: scim!.teamId });
const patch = (...Operations: unknown[]) => ({ schemas: [patchSchema], Operations });

beforeAll(async () => {
  scim = await startScim('phone-numbers');
}, 180_000);

afterAll(async () => {
  await scim?.stop();
});

async function getUser(id: string) {
  const reply = await scim!.client.getUser({ id, baseUrl }, ctx());
  return { etag: reply.etag, user: json(reply.resourceJson) };
}

async function patchUser(id: string, value: unknown) {
  const reply = await scim!.client.patchUser({ id, bodyJson: body(value), baseUrl, ifMatch: '' }, ctx());
  return { etag: reply.etag, user: json(reply.resourceJson) };
}

async function userNamesMatching(filter: string): Promise<string[]> {
  const reply = await scim!.client.listUsers({ filter, startIndex: 0, count: -1, baseUrl }, ctx());
  return json(reply.bodyJson).Resources.map((user: { userName: string }) => user.userName);
}

describe("phoneNumbers through Entra's round trip", () => {
  it('creates, returns, filters and patches work and mobile numbers; an identical PATCH keeps the version', async () => {
    const created = json(
      (
        await scim!.client.createUser(
          {
            bodyJson: body({
              schemas: [userSchema],
              userName: 'ryan@contoso.com',
              active: true,
              emails: [{ primary: true, type: 'work', value: 'ryan@contoso.com' }],
              phoneNumbers: [
                { type: 'work', value: '+1 425 555 0100' },
                { type: 'mobile', value: '+1 425 555 0142' },
              ],
            }),
            baseUrl,
          },
          ctx(),
        )
      ).resourceJson,
    );
    const id: string = created.id;
    const numbers = [
      { type: 'work', value: '+1 425 555 0100' },
      { type: 'mobile', value: '+1 425 555 0142' },
    ];
    expect(created.phoneNumbers).toEqual(numbers);
    expect((await getUser(id)).user.phoneNumbers).toEqual(numbers);

    expect(await userNamesMatching('phoneNumbers[type eq "work"].value eq "+1 425 555 0100"')).toEqual([
      'ryan@contoso.com',
    ]);
    expect(await userNamesMatching('phoneNumbers[type eq "work"].value eq "+1 425 555 0142"')).toEqual([]);

    const change = patch({
      op: 'Replace',
      path: 'phoneNumbers[type eq "work"].value',
      value: '+1 425 555 0199',
    });
    const changed = await patchUser(id, change);
    const after = await getUser(id);
    expect(after.user.phoneNumbers).toEqual([
      { type: 'work', value: '+1 425 555 0199' },
      { type: 'mobile', value: '+1 425 555 0142' },
    ]);
    expect(after.etag).toBe(changed.etag);
    expect(changed.etag).not.toBe(created.meta.version);

    const again = await patchUser(id, change);
    expect(again.etag).toBe(after.etag);
    expect(await getUser(id)).toEqual(after);
  });

  it('a PUT without phoneNumbers resets them to empty, as emails', async () => {
    const user = {
      schemas: [userSchema],
      userName: 'megan@contoso.com',
      phoneNumbers: [{ type: 'mobile', value: '+1 425 555 0111', primary: true }],
    };
    const id: string = json(
      (await scim!.client.createUser({ bodyJson: body(user), baseUrl }, ctx())).resourceJson,
    ).id;
    expect((await getUser(id)).user.phoneNumbers).toEqual(user.phoneNumbers);

    const { phoneNumbers: _omitted, ...withoutNumbers } = user;
    const replaced = await scim!.client.replaceUser(
      { id, bodyJson: body(withoutNumbers), baseUrl, ifMatch: '' },
      ctx(),
    );
    expect(json(replaced.resourceJson).phoneNumbers).toEqual([]);
    expect((await getUser(id)).user.phoneNumbers).toEqual([]);
  });

  it('refuses a phone number that is no string, naming the attribute and the value', async () => {
    await expect(
      scim!.client.createUser(
        {
          bodyJson: body({
            schemas: [userSchema],
            userName: 'nobody@contoso.com',
            phoneNumbers: [{ type: 'work', value: 4255550100 }],
          }),
          baseUrl,
        },
        ctx(),
      ),
    ).rejects.toMatchObject({
      meta: expect.objectContaining({ status: '400', scimType: 'invalidValue' }),
      message: expect.stringContaining("'phoneNumbers.value' must be a non-empty string, got 4255550100"),
    });
  });
});
