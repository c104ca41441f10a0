import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity, scim } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import { newUuid } from '@costgov/ids';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startIdentity, type IdentityUnderTest } from './fixture';

let started: IdentityUnderTest | undefined;
let client: RpcClient<typeof identity.IdentityService>;
let scimClient: RpcClient<typeof scim.ScimService>;
let teamA: { teamId: string };
let teamB: { teamId: string };

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const baseUrl = 'http://localhost/scim/v2';

async function createUser(team: { teamId: string }, userName: string): Promise<string> {
  const reply = await scimClient.createUser(
    {
      bodyJson: json({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName, active: true }),
      baseUrl,
    },
    team,
  );
  return (JSON.parse(Buffer.from(reply.resourceJson).toString()) as { id: string }).id;
}

beforeAll(async () => {
  started = await startIdentity();
  client = started.client;
  scimClient = createRpcClient(scim.ScimService, started.address);
  teamA = { teamId: (await client.createTeam({ name: 'a', plan: 'enterprise' })).id };
  teamB = { teamId: (await client.createTeam({ name: 'b', plan: 'enterprise' })).id };
});

afterAll(async () => {
  scimClient?.close();
  await started?.stop();
});

describe('FindActiveUsers', () => {
  it('returns the asked ids that are active users of the caller team, in the order asked, once each', async () => {
    const ada = await createUser(teamA, 'ada@example.com');
    const bob = await createUser(teamA, 'bob@example.com');
    const carol = await createUser(teamB, 'carol@example.com');
    const { userIds } = await client.findActiveUsers(
      { userIds: [bob, 'not-a-uuid', newUuid(), carol, ada, bob, ada.toUpperCase(), ''] },
      teamA,
    );
    expect(userIds).toEqual([bob, ada]);
  });

  it('does not return a deactivated user', async () => {
    const dan = await createUser(teamA, 'dan@example.com');
    await scimClient.patchUser(
      {
        id: dan,
        bodyJson: json({
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'replace', path: 'active', value: false }],
        }),
        baseUrl,
      },
      teamA,
    );
    expect((await client.findActiveUsers({ userIds: [dan] }, teamA)).userIds).toEqual([]);
  });

  it('answers an empty list for no ids, and refuses more than 100', async () => {
    expect((await client.findActiveUsers({ userIds: [] }, teamA)).userIds).toEqual([]);
    const tooMany = Array.from({ length: 101 }, () => newUuid());
    await expect(client.findActiveUsers({ userIds: tooMany }, teamA)).rejects.toBeInstanceOf(BadRequestError);
  });
});
