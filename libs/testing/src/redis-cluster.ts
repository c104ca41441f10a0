import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './fresh';
import { eventually } from './polling';
import {
  findExecutable,
  killOnExit,
  portAccepts,
  signalServer,
  spawnServer,
  waitForServer,
  type SpawnedServer,
} from './server-process';

const run = promisify(execFile);

/** One master of a throwaway Redis Cluster. */
export interface RedisClusterNode {
  port: number;
  url: string;
  /** A plain client of this node (not cluster-aware), for CLUSTER INFO and the like. */
  admin: Redis;
  /** kill -9, and waits for it to exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same nodes file: it rejoins with its slots, empty. */
  start(): Promise<void>;
}

/**
 * A Redis Cluster on loopback, owned by one test file (free ports, a temporary folder): `masters`
 * masters, each with `replicas` replicas (none by default). Without replicas a killed master's slots have
 * no server until it is started again, and the cluster as a whole answers CLUSTERDOWN once the others see
 * it fail (after `nodeTimeoutMs`); with them, a replica of the killed master is promoted in its place.
 */
export interface RedisCluster {
  /** Every server, masters and replicas alike (redis-cli chooses the roles; a failover changes them). */
  nodes: RedisClusterNode[];
  /** The URL of the first node: a seed from which a cluster client learns the others. */
  url: string;
  /** The node whose slots hold `key` (its hash tag, when it has one). */
  masterOf(key: string): Promise<RedisClusterNode>;
  /**
   * Until every running node reports `cluster_state:ok` and sees every other running node, and every
   * replica has synced with its master.
   */
  healthy(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const redisClusterBinaries = (): { server: string; cli: string } | undefined => {
  const server = findExecutable('redis-server');
  const cli = findExecutable('redis-cli');
  return server && cli ? { server, cli } : undefined;
};

export async function startRedisCluster({
  masters = 3,
  replicas = 0,
  nodeTimeoutMs = 1_000,
}: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {}): Promise<RedisCluster> {
  const binaries = redisClusterBinaries();
  if (!binaries) throw new Error('redis-server and redis-cli are needed on PATH for a Redis Cluster');
  const dir = mkdtempSync(path.join(tmpdir(), 'costgov-redis-cluster-'));
  const nodes: RedisClusterNode[] = [];
  const running = new Map<number, SpawnedServer>();
  const forgets: (() => void)[] = [];

  for (let i = 0; i < masters * (1 + replicas); i++) {
    const port = await freePort();
    const start = async () => {
      const server = spawnServer(binaries.server, [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ]);
      running.set(port, server);
      await waitForServer(`redis-server (cluster) on port ${port}`, server, () => portAccepts(port), 10_000);
    };
    await start();
    forgets.push(killOnExit((): ChildProcess | undefined => running.get(port)?.child));
    const admin = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50 });
    admin.on('error', () => {}); // it reconnects by itself after a restart
    await admin.connect();
    nodes.push({
      port,
      url: `redis://127.0.0.1:${port}`,
      admin,
      async kill() {
        const server = running.get(port);
        running.delete(port);
        if (server) await signalServer(server.child, 'SIGKILL');
      },
      start,
    });
  }

  const cluster: RedisCluster = {
    nodes,
    url: nodes[0]!.url,
    async masterOf(key) {
      const alive = nodes.find((node) => running.has(node.port))!;
      const slot = Number(await alive.admin.call('CLUSTER', 'KEYSLOT', key));
      const ranges = (await alive.admin.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
      const node = owner && nodes.find((candidate) => candidate.port === Number(owner[2][1]));
      if (!node) throw new Error(`no master holds slot ${slot} of ${key}`);
      return node;
    },
    async healthy(timeoutMs = 20_000) {
      await eventually(async () => {
        for (const node of nodes.filter((candidate) => running.has(candidate.port))) {
          const info = String(await node.admin.call('CLUSTER', 'INFO'));
          if (!info.includes('cluster_state:ok')) return undefined;
          const flags = String(await node.admin.call('CLUSTER', 'NODES'))
            .trim()
            .split('\n')
            .flatMap((line) => (line.split(' ')[2] ?? '').split(','));
          if (flags.some((flag) => ['fail', 'fail?', 'handshake', 'noaddr'].includes(flag))) return undefined;
          // A replica that has not synced with its master yet could not take its place.
          const replication = String(await node.admin.call('INFO', 'replication'));
          if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
            return undefined;
        }
        return true;
      }, timeoutMs);
    },
    async close() {
      for (const node of nodes) {
        node.admin.disconnect();
        await node.kill();
      }
      for (const forget of forgets) forget();
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    await run(binaries.cli, [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await cluster.healthy();
  } catch (error) {
    await cluster.close();
    throw error;
  }
  return cluster;
}
