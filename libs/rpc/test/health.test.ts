import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '@costgov/testing';
import { createHealthChecker, type HealthChecker } from '../src/health';
import { countingRelay, startProjectsServer, type ProjectsServer } from './fixture';

describe('a health checker kept open', () => {
  const cleanup: (() => unknown)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('asks again and again over one connection', async () => {
    const backend: ProjectsServer = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    const relay = await countingRelay(Number(backend.address.split(':')[1]));
    cleanup.push(() => relay.close());
    const checker: HealthChecker = createHealthChecker(`127.0.0.1:${relay.port}`);
    cleanup.push(() => checker.close());

    for (let i = 0; i < 20; i++) await expect(checker.check()).resolves.toBe('SERVING');
    expect(relay.connections()).toBe(1);
  });

  it('reports a server that went away, and answers SERVING as soon as it is back', async () => {
    const port = await freePort();
    let backend = await startProjectsServer(port);
    const checker = createHealthChecker(backend.address);
    cleanup.push(() => checker.close());
    await expect(checker.check()).resolves.toBe('SERVING');

    await backend.server.shutdown(0);
    await expect(checker.check('', 500)).rejects.toThrow();

    backend = await startProjectsServer(port);
    cleanup.push(() => backend.server.shutdown(0));
    const back = Date.now();
    let status: string | undefined;
    while (status !== 'SERVING' && Date.now() - back < 5_000) {
      status = await checker.check('', 500).catch(() => undefined);
    }
    expect(status).toBe('SERVING');
  });

  it('answers NOT_SERVING for a service the server stopped serving', async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    const checker = createHealthChecker(backend.address);
    cleanup.push(() => checker.close());
    await expect(checker.check('costgov.budgets.v1.ProjectsService')).resolves.toBe('SERVING');
    backend.server.setServing('costgov.budgets.v1.ProjectsService', false);
    await expect(checker.check('costgov.budgets.v1.ProjectsService')).resolves.toBe('NOT_SERVING');
  });
});
