import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from './fresh';
import {
  findExecutable,
  killOnExit,
  signalServer,
  spawnServer,
  waitForServer,
  type SpawnedServer,
} from './server-process';

/** A nats-server with JetStream owned by one test file: its own port and store folder, killable at will. */
export interface NatsServer {
  url: string;
  port: number;
  output(): string;
  /** kill -9; resolves once it is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store (streams and consumers survive). */
  start(): Promise<void>;
  /** Stops it and deletes its store. */
  close(): Promise<void>;
}

export const natsServerBinary = (): string | undefined => findExecutable('nats-server');

/**
 * `config`: the text of a nats-server configuration file (accounts, users, permissions); address, port
 * and JetStream store stay this function's. The readiness check connects without credentials, so a
 * configuration with users names a `no_auth_user`.
 */
export async function startNatsServer(options: { config?: string } = {}): Promise<NatsServer> {
  const binary = natsServerBinary();
  if (!binary) throw new Error('Cannot start NATS: nats-server not found on PATH');
  const port = await freePort();
  const storeDir = mkdtempSync(path.join(tmpdir(), 'costgov-nats-'));
  const url = `nats://127.0.0.1:${port}`;
  const configArgs: string[] = [];
  if (options.config !== undefined) {
    const configFile = path.join(storeDir, 'nats-server.conf');
    writeFileSync(configFile, options.config);
    configArgs.push('-c', configFile);
  }
  let server: SpawnedServer | undefined;
  const forget = killOnExit((): ChildProcess | undefined => server?.child);
  // Ready once JetStream answers, not merely once the port accepts.
  const jetStreamAnswers = async () => {
    const nc = await connect({ servers: url, timeout: 1_000, reconnect: false });
    try {
      await (await jetstreamManager(nc, { timeout: 1_000 })).getAccountInfo();
      return true;
    } finally {
      await nc.close();
    }
  };
  const start = async () => {
    server = spawnServer(binary, [
      ...configArgs,
      '-a',
      '127.0.0.1',
      '-p',
      String(port),
      '-js',
      '-sd',
      storeDir,
    ]);
    await waitForServer(`nats-server on port ${port}`, server, jetStreamAnswers, 20_000);
  };

  await start();
  return {
    url,
    port,
    output: () => server?.output() ?? '',
    kill: async () => {
      if (server) await signalServer(server.child, 'SIGKILL');
    },
    start,
    async close() {
      if (server) await signalServer(server.child, 'SIGTERM');
      forget();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
