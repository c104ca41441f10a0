import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgets } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '../src/client';
import { startProjectsServer, type ProjectsServer } from './fixture';

let backend: ProjectsServer;
let client: RpcClient<typeof budgets.ProjectsService>;
beforeAll(async () => {
  backend = await startProjectsServer();
  client = createRpcClient(budgets.ProjectsService, backend.address, { deadlineMs: 2_000 });
});
afterAll(async () => {
  client.close();
  await backend.server.shutdown(0);
});

describe('string fields', () => {
  it('keep a leading U+FEFF both ways (a TextDecoder drops it as a byte order mark by default)', async () => {
    const seen: string[] = [];
    backend.handlers.getProject = async (request) => {
      seen.push(request.id);
      return { id: request.id, name: '\uFEFF', connectionIds: ['\uFEFFcon'] };
    };
    const project = await client.getProject({ id: '\uFEFFprj_1' });
    expect(seen).toEqual(['\uFEFFprj_1']);
    expect(project).toMatchObject({ id: '\uFEFFprj_1', name: '\uFEFF', connectionIds: ['\uFEFFcon'] });
  });

  it('still carry every other character unchanged', async () => {
    const text = 'a\u0000é😀\uFEFF\uFFFD';
    backend.handlers.getProject = async (request) => ({ id: request.id, name: request.id });
    expect(await client.getProject({ id: text })).toMatchObject({ id: text, name: text });
  });
});
