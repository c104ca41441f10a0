import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Db } from '@costgov/db';
import {
  captureLogger,
  eventually,
  freePort,
  freshDb,
  killOnExit,
  natsServerBinary,
  signalServer,
  spawnServer,
  uniqueName,
  waitForServer,
  type SpawnedServer,
} from '@costgov/testing';
import type { Bus, Consumer } from '../src/bus';
import { consumeWithInbox } from '../src/inbox';
import { streamName } from '../src/jetstream-setup';
import { outboxMigration } from '../src/migration';
import { createNatsBus } from '../src/nats';
import { createOutbox } from '../src/outbox';
import { startOutboxRelay, type OutboxRelay } from '../src/relay';

/**
 * Issue 19: a three-server NATS cluster on loopback, streams with three replicas, the server leading the
 * stream killed with SIGKILL while events are written through the outbox and consumed by an idempotent
 * consumer. Nothing is lost, nothing is applied twice, and consumption resumes within seconds.
 * Runs with the other process tests (NATS_URL set), on servers of its own.
 */
const binary = natsServerBinary();
const runs = Boolean(process.env.NATS_URL) && binary !== undefined;

interface ClusterServer {
  name: string;
  url: string;
  server: SpawnedServer;
  forget: () => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!runs)('NATS cluster of three, one server killed under load', () => {
  const storeRoot = mkdtempSync(path.join(tmpdir(), 'costgov-nats-cluster-'));
  const servers: ClusterServer[] = [];
  const outbox = createOutbox({ source: 'budgets' });
  const namespace = uniqueName('t');
  const { logger, lines } = captureLogger({ level: 'debug' });
  let db: Db;
  let bus: Bus;
  let relay: OutboxRelay | undefined;
  let consumer: Consumer | undefined;

  beforeAll(async () => {
    const clientPorts = [await freePort(), await freePort(), await freePort()];
    const clusterPorts = [await freePort(), await freePort(), await freePort()];
    const routes = clusterPorts.map((port) => `nats://127.0.0.1:${port}`).join(',');
    for (let i = 0; i < 3; i++) {
      const name = `n${i + 1}`;
      const server = spawnServer(binary!, [
        '-a',
        '127.0.0.1',
        '-p',
        String(clientPorts[i]),
        '-n',
        name,
        '-js',
        '-sd',
        path.join(storeRoot, name),
        '--cluster_name',
        'costgov_test',
        '--cluster',
        `nats://127.0.0.1:${clusterPorts[i]}`,
        '--routes',
        routes,
      ]);
      const forget = killOnExit(() => server.child);
      servers.push({ name, url: `nats://127.0.0.1:${clientPorts[i]}`, server, forget });
    }
    // Ready once every server answers JetStream, which needs the cluster's meta leader.
    await Promise.all(
      servers.map(({ name, url, server }) =>
        waitForServer(
          `nats-server ${name}`,
          server,
          async () => {
            const nc = await connect({ servers: url, timeout: 1_000, reconnect: false });
            try {
              const info = await (await jetstreamManager(nc, { timeout: 1_000 })).getAccountInfo();
              return info !== undefined;
            } finally {
              await nc.close();
            }
          },
          30_000,
        ),
      ),
    );

    db = await freshDb('bus_nats_cluster');
    await migrate(db, [
      outboxMigration,
      { name: '0001_effects', sql: 'CREATE TABLE effects (event_id text NOT NULL, at bigint NOT NULL)' },
    ]);
    bus = await createNatsBus({
      url: servers.map((s) => s.url).join(','),
      namespace,
      logger,
      streamLimits: { replicas: 3, maxAgeMs: 60 * 60_000, maxBytes: 0 },
    });
  }, 60_000);

  afterAll(async () => {
    await relay?.stop();
    await consumer?.stop();
    await bus?.close();
    await db?.close();
    for (const { server, forget } of servers) {
      await signalServer(server.child, 'SIGTERM');
      forget();
    }
    rmSync(storeRoot, { recursive: true, force: true });
  });

  it('loses nothing, applies each event once, and consumes again within seconds', async () => {
    consumer = await consumeWithInbox({
      db,
      bus,
      logger,
      durable: 'cluster-effects',
      types: ['budgets.>'],
      handler: async (tx, event) => {
        await tx.query('INSERT INTO effects (event_id, at) VALUES ($1, $2)', [event.id, Date.now()]);
      },
    });
    relay = startOutboxRelay({ db, bus, logger, pollMs: 20 });

    const written: string[] = [];
    let writing = true;
    const writer = (async () => {
      let n = 0;
      while (writing) {
        n++;
        const event = await db.transaction((tx) =>
          outbox.add(tx, {
            type: 'budgets.project.created',
            subject: `prj_${n}`,
            data: { projectId: `prj_${n}` },
          }),
        );
        written.push(event.id);
        await sleep(5);
      }
    })();

    // The stream exists once the first event is published: three replicas, one per server.
    const jsmConnection = await connect({ servers: servers.map((s) => s.url) });
    const jsm = await jetstreamManager(jsmConnection);
    const stream = streamName(namespace, 'budgets');
    const info = await eventually(async () => {
      const found = await jsm.streams.info(stream);
      expect(found.cluster?.leader).toBeTruthy();
      expect(found.cluster?.replicas ?? []).toHaveLength(2);
      return found;
    }, 20_000);
    expect(info.config.num_replicas).toBe(3);

    await sleep(2_000); // load flowing before the fault
    const consumedBeforeKill = await effectCount(db);
    expect(consumedBeforeKill).toBeGreaterThan(0);
    const victim = servers.find((s) => s.name === info.cluster!.leader)!;
    const killedAt = Date.now();
    await signalServer(victim.server.child, 'SIGKILL');
    await sleep(5_000); // load flowing after it
    writing = false;
    await writer;
    await jsmConnection.close().catch(() => {});

    // Every written event consumed, each applied exactly once.
    await eventually(async () => expect(await effectCount(db)).toBe(written.length), 60_000);
    const { rows } = await db.query<{ event_id: string; n: number }>(
      'SELECT event_id, count(*)::int AS n FROM effects GROUP BY event_id',
    );
    expect(rows.filter((row) => row.n !== 1)).toEqual([]);
    expect(new Set(rows.map((row) => row.event_id))).toEqual(new Set(written));

    // The pause: the longest stretch without a consumed event from the kill on.
    const times = (
      await db.query<{ at: string }>('SELECT at FROM effects WHERE at >= $1 ORDER BY at', [killedAt])
    ).rows.map((row) => Number(row.at));
    expect(times.length).toBeGreaterThan(0);
    let pauseMs = times[0]! - killedAt;
    for (let i = 1; i < times.length; i++) pauseMs = Math.max(pauseMs, times[i]! - times[i - 1]!);
    const duplicates = lines.filter((line) => line.msg === 'duplicate').length;
    // What the bus logged after the kill, first time each (ms from the kill): where the pause went.
    const timeline = new Map<string, number>();
    for (const line of lines) {
      const at = Date.parse(String(line.time)) - killedAt;
      if (!(at >= 0) || line.level === 'debug' || timeline.has(line.msg)) continue;
      const err = line.err as { message?: string } | undefined;
      timeline.set(err?.message ? `${line.msg} (${err.message})` : line.msg, at);
    }
    console.log(
      'after the kill: ' +
        [...timeline].map(([msg, at]) => `+${at} ms ${msg}`).join('; ') +
        `; first event consumed +${times[0]! - killedAt} ms`,
    );
    console.log(
      `NATS cluster: killed ${victim.name} (stream leader); ${written.length} events written, ` +
        `${consumedBeforeKill} consumed before the kill, all consumed once (${duplicates} redelivered ` +
        `duplicates skipped by the inbox); longest consumer pause after the kill ${pauseMs} ms`,
    );
    // NATS 2.9 elects the stream's (and consumer's) new leader after 4 to 9 s without the old one; the
    // bus adds at most a 2 s publish timeout or 2 s of missed pull heartbeats. Measured 4.3 to 7.6 s on
    // this two-core machine, 2.9 to 8.4 s over 15 runs (10 s and up to 17 s with 5 s publish timeouts
    // that waited behind a stream check, and 5 s pulls); the bound is the slowest election plus the
    // bus's 2 s and a margin for a CI machine running other tests at the same time.
    expect(pauseMs).toBeLessThan(15_000);
  }, 120_000);
});

async function effectCount(db: Db): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM effects');
  return rows[0]!.n;
}
