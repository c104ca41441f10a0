import { afterAll, describe, expect, it } from 'vitest';
import { budgets } from '@costgov/contracts';
import { checkHealth, createRpcClient } from '@costgov/rpc';
import { freePort, startProcess, type Proc } from '@costgov/testing';

const procs: Proc[] = [];
afterAll(() => Promise.all(procs.map((proc) => proc.stop())));

describe('a service started on its own', () => {
  it(
    'on SIGTERM reports NOT_SERVING while it still answers calls for the drain period, then exits 0',
    { timeout: 90_000 },
    async () => {
      const [grpcPort, metricsPort] = await Promise.all([freePort(), freePort()]);
      const address = `127.0.0.1:${grpcPort}`;
      // Embedded storage and bus: the process's own behaviour is under test, not the infrastructure.
      const proc = startProcess('budgets', 'services/budgets/src/main.ts', {
        GRPC_HOST: '127.0.0.1',
        GRPC_PORT: `${grpcPort}`,
        METRICS_PORT: `${metricsPort}`,
        DATA_DIR: 'memory',
        DATABASE_URL: '',
        NATS_URL: '',
        SHUTDOWN_DRAIN_MS: '3000',
      });
      procs.push(proc);
      const deadline = Date.now() + 60_000;
      while ((await checkHealth(address).catch(() => undefined)) !== 'SERVING') {
        if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(proc.output());
        await new Promise((resolve) => setTimeout(resolve, 200));
      }

      const exited = new Promise<number | null>((resolve) => proc.child.once('exit', resolve));
      proc.child.kill('SIGTERM');
      let status = await checkHealth(address);
      for (let i = 0; i < 20 && status === 'SERVING'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = await checkHealth(address);
      }
      expect(status).toBe('NOT_SERVING');
      const client = createRpcClient(budgets.ProjectsService, address, { deadlineMs: 2_000 });
      // A call still reaches the service and is answered (whatever it says), not refused as unavailable.
      const outcome = await client.listProjects({}, { teamId: 'team_drain' }).then(
        () => 'answered',
        (error: { code?: string }) => error.code,
      );
      expect(outcome).toBe('answered');
      client.close();
      expect(await exited).toBe(0);
    },
  );
});
