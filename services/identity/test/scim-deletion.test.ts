import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { scim } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import type { RpcClient } from '@costgov/rpc';
import { body, json, startScim, type ScimUnderTest } from './fixture';

/** SCIM DELETE of a user, seen from identity: what is kept, what SCIM sees, which events go out. */

const userSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
const groupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const baseUrl = 'https://api.example.com/scim/v2';

let scimService: ScimUnderTest | undefined;
let db: Db;
let client: RpcClient<typeof scim.ScimService>;
let teamId = '';

const ctx = () => ({ teamId });

async function createUser(userName: string): Promise<string> {
  const reply = await client.createUser(
    { bodyJson: body({ schemas: [userSchema], userName }), baseUrl },
    ctx(),
  );
  return json(reply.resourceJson).id;
}

beforeAll(async () => {
  scimService = await startScim('deletions');
  ({ db, client, teamId } = scimService);
}, 180_000);

afterAll(async () => {
  await scimService?.stop();
});

describe('DELETE /Users/:id', () => {
  it('deactivates and keeps the user, takes them out of their groups, and publishes both changes', async () => {
    const gone = await createUser('gone@example.com');
    const stays = await createUser('stays@example.com');
    const group = json(
      (
        await client.createGroup(
          {
            bodyJson: body({
              schemas: [groupSchema],
              displayName: 'Ops',
              members: [{ value: gone }, { value: stays }],
            }),
            baseUrl,
          },
          ctx(),
        )
      ).resourceJson,
    );

    await client.deleteUser({ id: gone, baseUrl }, ctx());

    // Kept: the row is still there, inactive, marked deleted.
    const { rows } = await db.query<{ active: boolean; deleted_at: Date | null; user_name: string }>(
      'SELECT active, deleted_at, user_name FROM scim_users WHERE id = $1',
      [gone],
    );
    expect(rows).toEqual([{ active: false, deleted_at: expect.any(Date), user_name: 'gone@example.com' }]);

    // Published: the deactivation (gateways drop cached principals) and the group's new member list.
    const { rows: events } = await db.query<{ type: string; subject: string; data: Record<string, unknown> }>(
      `SELECT type, subject, data FROM outbox WHERE subject = ANY($1) ORDER BY id`,
      [[gone, group.id]],
    );
    expect(events.slice(-2)).toEqual([
      { type: 'identity.user.deactivated', subject: gone, data: expect.objectContaining({ userId: gone }) },
      {
        type: 'identity.group.updated',
        subject: group.id,
        data: expect.objectContaining({ groupId: group.id, memberIds: [stays] }),
      },
    ]);

    // The group changed: a new version and ETag, without the deleted member.
    const after = await client.getGroup({ id: group.id, baseUrl }, ctx());
    expect(after.etag).toBe('W/"2"');
    expect(json(after.resourceJson).members.map((m: { value: string }) => m.value)).toEqual([stays]);
  });

  it('makes the user unknown to SCIM, frees the userName, and is not repeatable', async () => {
    const gone = await createUser('twice@example.com');
    await client.deleteUser({ id: gone, baseUrl }, ctx());
    for (const call of [
      () => client.getUser({ id: gone, baseUrl }, ctx()),
      () => client.deleteUser({ id: gone, baseUrl }, ctx()),
      () =>
        client.patchUser(
          {
            id: gone,
            baseUrl,
            bodyJson: body({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [] }),
          },
          ctx(),
        ),
    ]) {
      await expect(call()).rejects.toMatchObject({ meta: expect.objectContaining({ status: '404' }) });
    }
    const list = json(
      (await client.listUsers({ filter: 'userName eq "twice@example.com"', count: -1, baseUrl }, ctx()))
        .bodyJson,
    );
    expect(list.totalResults).toBe(0);
    const again = await createUser('TWICE@example.com');
    expect(again).not.toBe(gone);
    // Only one of the two may hold the name while not deleted: the index says so, not just the code.
    await expect(
      db.query(`UPDATE scim_users SET deleted_at = NULL WHERE id = $1`, [gone]),
    ).rejects.toMatchObject({ code: '23505' });
  });
});
