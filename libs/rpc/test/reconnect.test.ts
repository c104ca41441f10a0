import { describe, expect, it } from 'vitest';
import { budgets } from '@costgov/contracts';
import { UnavailableError } from '@costgov/errors';
import { freePort } from '@costgov/testing';
import { createRpcClient } from '../src/client';
import { startProjectsServer } from './fixture';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a backend that restarts', () => {
  it('is called successfully as soon as it is back, not after the reconnect backoff', async () => {
    const port = await freePort();
    let backend = await startProjectsServer(port);
    backend.handlers.getProject = async (request) => ({ id: request.id });
    const client = createRpcClient(budgets.ProjectsService, backend.address, { deadlineMs: 2_000 });
    try {
      await expect(client.getProject({ id: 'prj_1' })).resolves.toMatchObject({ id: 'prj_1' });

      await backend.server.shutdown(0);
      // Down long enough for grpc-js's default backoff (1 s, then x1.6) to have grown past a second.
      const downUntil = Date.now() + 2_500;
      while (Date.now() < downUntil) {
        await expect(client.getProject({ id: 'prj_1' })).rejects.toBeInstanceOf(UnavailableError);
        await sleep(100);
      }

      backend = await startProjectsServer(port);
      backend.handlers.getProject = async (request) => ({ id: request.id });
      const back = Date.now();
      // The very next calls succeed: at most one short wait for the connection, no failures in between.
      for (let i = 0; i < 5; i++) {
        await expect(client.getProject({ id: `prj_${i}` })).resolves.toMatchObject({ id: `prj_${i}` });
      }
      expect(Date.now() - back).toBeLessThan(1_000);
    } finally {
      client.close();
      await backend.server.shutdown(0);
    }
  });

  it('still fails fast while it is down', async () => {
    const port = await freePort();
    const client = createRpcClient(budgets.ProjectsService, `127.0.0.1:${port}`, { deadlineMs: 5_000 });
    try {
      for (let i = 0; i < 5; i++) {
        const started = Date.now();
        await expect(client.getProject({ id: 'prj_1' })).rejects.toBeInstanceOf(UnavailableError);
        expect(Date.now() - started).toBeLessThan(1_000);
      }
    } finally {
      client.close();
    }
  });
});
