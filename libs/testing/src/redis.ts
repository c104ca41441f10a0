import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './fresh';
import {
  findExecutable,
  killOnExit,
  portAccepts,
  signalServer,
  spawnServer,
  waitForServer,
  type SpawnedServer,
} from './server-process';

/**
 * A redis-server owned by one test file, on a port of its own, so tests can stop, kill, restart and
 * freeze it without disturbing anyone else's Redis.
 */
export interface RedisServer {
  url: string;
  port: number;
  /** A plain client (offline queue on) for reading the server's clock and keys. */
  admin: Redis;
  /** The server's clock in milliseconds, as the limiter's script reads it. */
  time(): Promise<number>;
  /** Stops the process (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** kill -9, and waits for it to exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a Redis that accepts connections but answers nothing. */
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export const redisServerBinary = (): string | undefined => findExecutable('redis-server');

export async function startRedisServer(): Promise<RedisServer> {
  const binary = redisServerBinary() ?? 'redis-server';
  const port = await freePort();
  let server: SpawnedServer | undefined;
  const forget = killOnExit((): ChildProcess | undefined => server?.child);

  const start = async () => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    server = spawnServer(binary, args);
    await waitForServer(`redis-server on port ${port}`, server, () => portAccepts(port), 10_000);
  };
  const stop = async (signal: NodeJS.Signals) => {
    const running = server;
    server = undefined;
    if (!running) return;
    running.child.kill('SIGCONT'); // a frozen server must run to act on SIGTERM
    await signalServer(running.child, signal);
  };

  await start();
  const admin = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50 });
  admin.on('error', () => {}); // it reconnects by itself after a restart
  await admin.connect();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    admin,
    async time() {
      const [seconds, micros] = await admin.time();
      return Number(seconds) * 1000 + Number(micros) / 1000;
    },
    stop: () => stop('SIGTERM'),
    kill: () => stop('SIGKILL'),
    start,
    freeze: () => server?.child.kill('SIGSTOP'),
    thaw: () => server?.child.kill('SIGCONT'),
    async close() {
      admin.disconnect();
      await stop('SIGTERM');
      forget();
    },
  };
}
