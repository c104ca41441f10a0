import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { eventually, freePort } from './index';

/**
 * A redis-server owned by one test file, on a port of its own, so tests can stop, restart and freeze it
 * without disturbing anyone else's Redis.
 */
export interface RedisServer {
  url: string;
  /** A plain client (offline queue on) for reading the server's clock and keys. */
  admin: Redis;
  /** The server's clock in milliseconds, as the limiter's script reads it. */
  time(): Promise<number>;
  /** Stops the process (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a Redis that accepts connections but answers nothing. */
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

const portAccepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const killOnExit = () => child?.kill('SIGKILL');
  process.once('exit', killOnExit);

  const start = async () => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    const started = spawn('redis-server', args, { stdio: 'ignore' });
    child = started;
    let failure: Error | undefined;
    started.once('error', (err) => (failure = err));
    started.once('exit', (code) => (failure ??= new Error(`exited with code ${code}`)));
    await eventually(async () => {
      if (failure) throw new Error(`redis-server did not start on port ${port}: ${failure.message}`);
      return (await portAccepts(port)) ? true : undefined;
    }, 10_000);
    started.removeAllListeners('exit');
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    running.kill('SIGCONT');
    running.kill('SIGTERM');
    await once(running, 'exit');
  };

  await start();
  const admin = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50 });
  admin.on('error', () => {}); // it reconnects by itself after a restart
  await admin.connect();
  return {
    url: `redis://127.0.0.1:${port}`,
    admin,
    async time() {
      const [seconds, micros] = await admin.time();
      return Number(seconds) * 1000 + Number(micros) / 1000;
    },
    stop,
    start,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
    async close() {
      admin.disconnect();
      await stop();
      process.off('exit', killOnExit);
    },
  };
}
