import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { budgets } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import { createRpcClient, type RpcClient } from '../src/client';
import type { CallContext } from '../src/context';
import { startProjectsServer, type ProjectsServer } from './fixture';
import { teamScoped } from '../src/team-scoped';

describe('teamScoped', () => {
  it.each([
    { name: 'no context fields', ctx: {} },
    { name: 'an empty team', ctx: { teamId: '' } },
    { name: 'an actor but no team', ctx: { actor: 'ops@example.com', requestId: 'req_1' } },
  ])('refuses a call with $name (400) before the handler runs', async ({ ctx }) => {
    const handler = vi.fn(async () => 'ran');
    const error = await teamScoped(handler)({}, ctx as CallContext).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({
      code: 'bad_request',
      message: 'The call carries no team (x-team-id metadata).',
    });
    expect(handler).not.toHaveBeenCalled();
  });

  it("runs the handler with the request and the call's own context", async () => {
    const ctx: CallContext = { teamId: 'team_1', actor: 'ops@example.com' };
    const handler = vi.fn(async (request: { id: string }, scoped: CallContext & { teamId: string }) => {
      scoped.replayed = true; // as `once` does for an answer it replays
      return `${request.id} of ${scoped.teamId}`;
    });
    await expect(teamScoped(handler)({ id: 'prj_1' }, ctx)).resolves.toBe('prj_1 of team_1');
    expect(handler.mock.calls[0]![1]).toBe(ctx);
    expect(ctx.replayed).toBe(true);
  });

  it("passes the handler's failure on as it is", async () => {
    const failure = new BadRequestError('Bad name.', [{ field: 'name', message: 'is blank' }]);
    await expect(
      teamScoped(async () => {
        throw failure;
      })({}, { teamId: 'team_1' }),
    ).rejects.toBe(failure);
  });
});

describe('teamScoped over the wire', () => {
  let backend: ProjectsServer;
  let client: RpcClient<typeof budgets.ProjectsService>;
  beforeAll(async () => {
    backend = await startProjectsServer();
    client = createRpcClient(budgets.ProjectsService, backend.address, { deadlineMs: 2_000 });
    backend.handlers.getProject = teamScoped(async (request, { teamId }) => ({
      id: request.id,
      name: teamId,
    }));
  });
  afterAll(async () => {
    client.close();
    await backend.server.shutdown(0);
  });

  it('serves a call that names its team (x-team-id)', async () => {
    await expect(client.getProject({ id: 'prj_1' }, { teamId: 'team_1' })).resolves.toMatchObject({
      id: 'prj_1',
      name: 'team_1',
    });
  });

  it('answers a call without a team as bad_request (INVALID_ARGUMENT)', async () => {
    await expect(client.getProject({ id: 'prj_1' })).rejects.toMatchObject({
      code: 'bad_request',
      message: 'The call carries no team (x-team-id metadata).',
    });
  });
});
