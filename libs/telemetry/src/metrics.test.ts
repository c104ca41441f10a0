import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startMetricsServer, type MetricsServer } from './metrics';

const occupy = (): Promise<Server> =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
const portOf = (server: Server) => (server.address() as { port: number }).port;

let running: MetricsServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('the metrics server', () => {
  it('serves /metrics on a free port', async () => {
    running = await startMetricsServer(0, { host: '127.0.0.1' });
    const response = await fetch(`http://127.0.0.1:${running.port}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/process_cpu_user_seconds_total/);
  });

  it('does not fail when its port is held, warns, and binds once the port is free again', async () => {
    const holder = await occupy();
    const port = portOf(holder);
    const warnings: string[] = [];
    const infos: string[] = [];
    running = await startMetricsServer(port, {
      host: '127.0.0.1',
      retryEveryMs: 50,
      logger: { warn: (_fields, message) => warnings.push(message), info: (_f, m) => infos.push(m) },
    });
    expect(warnings).toEqual(['metrics port unavailable; retrying in the background']);
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    const deadline = Date.now() + 5_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe(200);
    expect(infos).toEqual(['metrics port bound']);
  });

  it('gives up after retryForMs with a warning, and close() still resolves', async () => {
    const holder = await occupy();
    const warnings: string[] = [];
    running = await startMetricsServer(portOf(holder), {
      host: '127.0.0.1',
      retryEveryMs: 20,
      retryForMs: 100,
      logger: { warn: (_fields, message) => warnings.push(message), info: () => undefined },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(warnings.at(-1)).toBe('metrics port still unavailable; /metrics is not served');
    await running.close();
    running = undefined;
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  });
});
