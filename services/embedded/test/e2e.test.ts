import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteStreams,
  eventually,
  freePort,
  realInfra,
  startBackends,
  startGatewayProcess,
  startProcess,
  uniqueName,
  waitForReady,
  type Proc,
  createTestDatabase,
  type TestDatabase,
} from '@costgov/testing';
import { createGuardClient, unwrap } from '@costgov/client';

const apiKey = 'cg_live_e2ebootstrapkey00000000000000000000';

/** The REST flow both topologies must pass: create, list, read, update, delete a project. */
async function projectLifecycle(url: string, key: string): Promise<string> {
  const client = createGuardClient({ baseUrl: url, apiKey: key });
  const created = await client.POST('/v1/guard/projects', { body: { name: 'e2e' } });
  expect(created.response.status, JSON.stringify(created.error)).toBe(201);
  const id = created.data!.data.id;
  const list = await unwrap(client.GET('/v1/guard/projects'));
  expect(list.data.map((p) => p.id)).toEqual([id]);
  expect(list.meta.total_count).toBe(1);
  const byId = { params: { path: { id } } };
  const read = await unwrap(client.GET('/v1/guard/projects/{id}', byId));
  expect(read.data.budgets).toEqual([]);
  const patched = await unwrap(
    client.PATCH('/v1/guard/projects/{id}', { ...byId, body: { name: 'e2e-renamed' } }),
  );
  expect(patched.data.name).toBe('e2e-renamed');
  expect((await client.DELETE('/v1/guard/projects/{id}', byId)).response.status).toBe(204);
  const gone = await client.GET('/v1/guard/projects/{id}', byId);
  expect(gone.response.status).toBe(404);
  expect(gone.error?.error.code).toBe('not_found');
  return id;
}

describe.runIf(realInfra)('end to end: every service as its own process on real Postgres and NATS', () => {
  let database: TestDatabase;
  const namespace = uniqueName('e2e');
  const procs: Proc[] = [];
  let url = '';

  beforeAll(async () => {
    database = await createTestDatabase('e2e');
    const backends = await startBackends(
      {
        DATABASE_URL: database.url,
        NATS_URL: process.env.NATS_URL,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: apiKey,
      },
      procs,
    );
    url = (await startGatewayProcess('gateway', backends, {}, procs)).url;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await database?.drop();
    await deleteStreams(process.env.NATS_URL!, namespace);
  }, 60_000);

  it('drives projects over REST, and project.deleted is consumed exactly once though delivered twice', async () => {
    const id = await projectLifecycle(url, apiKey);

    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const purges = () =>
        db.query('SELECT event_id FROM violations.project_purges WHERE project_id = $1', [id]);
      const eventId = await eventually(
        async () => (await purges()).rows[0]?.event_id as string | undefined,
        20_000,
      );

      // Deliver the same CloudEvent again, past the publish dedupe (a new Nats-Msg-Id), as a redelivery would.
      const nc = await connect({ servers: process.env.NATS_URL });
      const jsm = await jetstreamManager(nc);
      const subject = `${namespace}.budgets.project.deleted`;
      const stored = await jsm.streams.getMessage(`${namespace}_BUDGETS`.toUpperCase(), {
        last_by_subj: subject,
      });
      expect(stored!.header.get('ce-id')).toBe(eventId);
      const again = natsHeaders();
      for (const [key, values] of stored!.header) for (const value of values) again.append(key, value);
      again.set('Nats-Msg-Id', `${eventId}-again`);
      const ack = await jetstream(nc).publish(subject, stored!.data, { headers: again });

      // Wait until the violations consumer has been handed the copy, then check the effect happened once.
      await eventually(async () => {
        for await (const consumer of jsm.consumers.list(`${namespace}_BUDGETS`.toUpperCase())) {
          if (
            consumer.delivered.stream_seq >= ack.seq &&
            consumer.num_ack_pending === 0 &&
            consumer.num_pending === 0
          )
            return true;
        }
        return undefined;
      }, 20_000);
      await nc.close();
      expect((await purges()).rows).toHaveLength(1);
      const inbox = await db.query('SELECT count(*)::int AS n FROM violations.inbox WHERE event_id = $1', [
        eventId,
      ]);
      expect(inbox.rows[0].n).toBe(1);
    } finally {
      await db.end();
    }
  }, 120_000);
});

describe.skipIf(realInfra)('end to end: `npm start` on the embedded default', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'costgov-e2e-'));
  let proc: Proc;
  let url = '';
  let metricsUrl = '';

  beforeAll(async () => {
    const [port, metrics, identity, budgets, violations, costs, scanner, notifier] = await Promise.all(
      Array.from({ length: 8 }, freePort),
    );
    proc = startProcess('embedded', 'services/embedded/src/main.ts', {
      DATA_DIR: dataDir,
      PORT: `${port}`,
      METRICS_PORT: `${metrics}`,
      IDENTITY_ADDR: `127.0.0.1:${identity}`,
      BUDGETS_ADDR: `127.0.0.1:${budgets}`,
      VIOLATIONS_ADDR: `127.0.0.1:${violations}`,
      COSTS_ADDR: `127.0.0.1:${costs}`,
      SCANNER_ADDR: `127.0.0.1:${scanner}`,
      NOTIFIER_ADDR: `127.0.0.1:${notifier}`,
      GUARD_BOOTSTRAP_API_KEY: '',
    });
    url = `http://127.0.0.1:${port}`;
    metricsUrl = `http://127.0.0.1:${metrics}/metrics`;
    await waitForReady(url, [proc]);
  }, 120_000);

  afterAll(async () => {
    await proc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints the URL and a generated key once, and serves projects with it', async () => {
    const output = await eventually(() =>
      proc.output().includes('listening on') ? proc.output() : undefined,
    );
    expect(output).toContain(`listening on http://localhost:`);
    const key = output.match(/\b(cg_live_[0-9A-Za-z]{40})\b/)?.[1];
    expect(key).toBeDefined();
    await projectLifecycle(url, key!);

    // The requests show in Prometheus metrics: HTTP at the gateway, gRPC at the services.
    const metrics = await (await fetch(metricsUrl)).text();
    expect(metrics).toMatch(
      /^http_server_request_duration_seconds_count\{[^}]*http_route="\/v1\/guard\/projects\/:id"[^}]*\} [1-9]/m,
    );
    expect(metrics).toMatch(
      /^rpc_server_call_duration_seconds_count\{[^}]*rpc_method="costgov\.budgets\.v1\.ProjectsService\/GetProject"[^}]*rpc_status_code="OK"[^}]*\} [1-9]/m,
    );
  }, 60_000);
});
