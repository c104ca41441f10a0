/**
 * Scanner: one scan over a generated FOCUS file of a million rows (POST /v1/guard/scans to `completed`),
 * the throughput of many small scans with one and with two worker processes on the same work queue, and
 * the p99 of GET /v1/guard/cost-posture at 20 connections. Needs NATS: workers take scans from JetStream.
 */
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { identity } from '@costgov/contracts';
import { focusCsv } from '@costgov/costs';
import { createRpcClient } from '@costgov/rpc';
import { dependencyEnv, freePort, startProcess } from '@costgov/testing';
import { measure, processProbe, progress, type LoadSettings } from './load';
import type { Backends, Gateway, Proc } from './processes';
import { scannerTargets, type ScannerResult, type ThroughputRun } from './scanner-report';
import { guardCaller } from './guard';

export interface ScannerSettings {
  gateway: Gateway;
  backends: Backends;
  databaseUrl: string;
  teamId: string;
  apiKey: string;
  scanRows: number;
  smallScans: number;
  load: LoadSettings;
  /** Where the worker processes go, so that the bench stops them with the others. */
  procs: Proc[];
}

/** Whether something accepts TCP connections at a nats:// URL (the bench's processes would retry forever). */
export function natsReachable(url: string, timeoutMs = 2_000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || 4222) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The small project's upload: a few resources, so a scan's fixed costs (queue, credits, findings) dominate. */
const smallRows = 2_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function scannerSection(settings: ScannerSettings) {
  const { gateway, backends, apiKey } = settings;
  const auth = { authorization: `Bearer ${apiKey}` };
  const workers: Proc[] = [];

  const call = guardCaller(gateway.url, apiKey);

  /** The file streamed from disk as the body of one upload (as the costs section uploads). */
  async function upload(connectionId: string, file: string): Promise<number> {
    const { size } = await stat(file);
    const url = new URL(`/v1/guard/connections/${connectionId}/cost-data`, gateway.url);
    return new Promise((resolve, reject) => {
      const request = http.request(
        url,
        { method: 'POST', headers: { ...auth, 'content-type': 'text/csv', 'content-length': size } },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => {
            if (response.statusCode !== 200)
              return reject(new Error(`upload answered ${response.statusCode}: ${text.slice(0, 2000)}`));
            resolve((JSON.parse(text) as { data: { rows: number } }).data.rows);
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      createReadStream(file).on('error', reject).pipe(request);
    });
  }

  /** A connection holding a generated FOCUS file of `rows` rows of this month, and a project over it. */
  async function projectWithData(dir: string, name: string, rows: number): Promise<string> {
    const file = path.join(dir, `${name}.csv`);
    const month = new Date().toISOString().slice(0, 7);
    progress(`generating a FOCUS file of ${rows} rows for ${month}`);
    await pipeline(
      focusCsv({ rows, month, seed: rows, version: '1.2', currency: 'USD' }),
      createWriteStream(file),
    );
    const { data: connection } = await call<{ id: string }>('POST', '/v1/guard/connections', {
      name: `bench ${name}`,
      provider: 'aws',
    });
    progress(`uploading ${rows} rows`);
    const stored = await upload(connection.id, file);
    if (stored !== rows) throw new Error(`the upload of ${rows} rows stored ${stored}`);
    await rm(file, { force: true });
    const { data: project } = await call<{ id: string }>('POST', '/v1/guard/projects', {
      name: `bench ${name}`,
      connection_ids: [connection.id],
    });
    return project.id;
  }

  /** A worker process (SCANNER_MODE=worker) on the shared queue; answers once its metrics endpoint does. */
  async function startWorker(): Promise<void> {
    const [grpcPort, metricsPort] = await Promise.all([freePort(), freePort()]);
    const proc = startProcess(`scanner-worker-${workers.length + 1}`, 'services/scanner/src/worker.ts', {
      ...backends.env,
      GRPC_PORT: `${grpcPort}`,
      METRICS_PORT: `${metricsPort}`,
      SCANNER_MODE: 'worker',
      ...dependencyEnv('scanner', backends),
    });
    workers.push(proc);
    settings.procs.push(proc);
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited:\n${proc.output()}`);
      const up = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline)
        throw new Error(`${proc.name} did not start within 120 s:\n${proc.output()}`);
      await sleep(200);
    }
    // Its JetStream consumer is bound right after start; a moment more so it pulls from the first scan.
    await sleep(1_000);
  }

  const postScan = async (projectId: string) => {
    const { status, data } = await call<{ id: string; status: string }>('POST', '/v1/guard/scans', {
      project_id: projectId,
    });
    if (status !== 202) throw new Error(`POST /v1/guard/scans answered ${status}`);
    return data.id;
  };

  /**
   * CPU seconds per process from now until the returned function is called: the worker processes as one,
   * the other services by name, and the Postgres backends of the bench database (also those started since).
   */
  async function watchCpu(db: pg.Client): Promise<() => Promise<Record<string, number>>> {
    const seconds = (pid: number) => processProbe('', [pid]).snapshot()[0]!;
    const postgresPids = async () =>
      (
        await db.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
        )
      ).rows.map((row) => row.pid);
    const groupOf = (proc: Proc) => (proc.name.startsWith('scanner-worker') ? 'workers' : proc.name);
    const watched = settings.procs.filter((proc) => proc.child.exitCode === null && proc.child.pid);
    const before = new Map<number, number>(
      watched.map((proc) => [proc.child.pid!, seconds(proc.child.pid!)]),
    );
    for (const pid of await postgresPids()) before.set(pid, seconds(pid));
    return async () => {
      const spent: Record<string, number> = {};
      const add = (group: string, pid: number) => {
        const end = seconds(pid);
        const start = before.get(pid) ?? 0;
        if (Number.isFinite(end) && Number.isFinite(start)) spent[group] = (spent[group] ?? 0) + end - start;
      };
      for (const proc of watched) add(groupOf(proc), proc.child.pid!);
      for (const pid of new Set([...(await postgresPids()), ...before.keys()]))
        if (!watched.some((proc) => proc.child.pid === pid)) add('postgres', pid);
      return Object.fromEntries(Object.entries(spent).map(([name, s]) => [name, Math.round(s * 10) / 10]));
    };
  }

  /** 1. One scan of the large project: from the POST to `completed`, polled every 100 ms. */
  async function largeScan(projectId: string): Promise<ScannerResult['largeScan']> {
    progress(`scanning the project of ${settings.scanRows} rows`);
    const started = performance.now();
    const id = await postScan(projectId);
    let polls = 0;
    for (;;) {
      polls++;
      const { data } = await call<{ status: string; resources_scanned: number; error?: string }>(
        'GET',
        `/v1/guard/scans/${id}`,
      );
      if (data.status === 'failed') throw new Error(`scan ${id} failed: ${data.error}`);
      if (data.status === 'completed') {
        const seconds = (performance.now() - started) / 1000;
        const { data: findings } = await call<unknown[]>(
          'GET',
          `/v1/guard/findings?scan_id=${id}&per_page=100`,
        );
        progress(`scan of ${settings.scanRows} rows completed in ${seconds.toFixed(1)} s`);
        return {
          rows: settings.scanRows,
          seconds,
          resourcesScanned: data.resources_scanned,
          findingsFirstPage: findings.length,
          polls,
          verdict: seconds < scannerTargets.largeScanSeconds ? 'PASS' : 'BELOW',
        };
      }
      if (performance.now() - started > 600_000) throw new Error(`scan ${id} not completed within 600 s`);
      await sleep(100);
    }
  }

  /**
   * 2. `count` scans of the small project, posted 10 at a time; the time from the first POST until every
   * one has ended, and the workers' span (first started_at to last completed_at) with scans per process.
   */
  async function throughput(
    projectId: string,
    db: pg.Client,
    count = settings.smallScans,
  ): Promise<ThroughputRun> {
    progress(`${count} small scans with ${workers.length} worker process(es)`);
    const cpu = await watchCpu(db);
    const started = performance.now();
    const ids: string[] = [];
    const inFlight = 10;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (ids.length < count) {
          const slot = ids.push('') - 1;
          ids[slot] = await postScan(projectId);
        }
      }),
    );
    for (;;) {
      const { rows } = await db.query<{ ended: string; failed: string }>(
        `SELECT count(*) FILTER (WHERE status IN ('completed', 'failed')) AS ended,
                count(*) FILTER (WHERE status = 'failed') AS failed
         FROM scanner.scans WHERE id = ANY($1)`,
        [ids],
      );
      if (Number(rows[0]!.ended) === count) {
        const seconds = (performance.now() - started) / 1000;
        const failed = Number(rows[0]!.failed);
        if (failed > 0) throw new Error(`${failed} of the ${count} small scans failed`);
        // worker_id is `<host>:<pid>:<run>`: the scans each worker process ran.
        const { rows: span } = await db.query<{ seconds: number; per_worker: Record<string, number> }>(
          `SELECT extract(epoch FROM max(completed_at) - min(started_at))::float8 AS seconds,
                  (SELECT jsonb_object_agg(pid, n) FROM (
                     SELECT split_part(worker_id, ':', 2) AS pid, count(*) AS n
                     FROM scanner.scans WHERE id = ANY($1) GROUP BY 1) AS w) AS per_worker
           FROM scanner.scans WHERE id = ANY($1)`,
          [ids],
        );
        const perWorker = Object.values(span[0]!.per_worker).sort((a, b) => b - a);
        const cpuSeconds = await cpu();
        progress(
          `${count} scans in ${seconds.toFixed(1)} s with ${workers.length} worker(s); per process ${perWorker.join(', ')}; CPU s ${JSON.stringify(cpuSeconds)}`,
        );
        return {
          workers: workers.length,
          scans: count,
          seconds,
          scansPerSecond: count / seconds,
          workerSpanSeconds: span[0]!.seconds,
          scansPerWorker: perWorker,
          cpuSeconds,
        };
      }
      if (performance.now() - started > 600_000) throw new Error(`small scans not ended within 600 s`);
      await sleep(50);
    }
  }

  return async function run(): Promise<ScannerResult> {
    const cores = os.availableParallelism();
    const identityClient = createRpcClient(identity.IdentityService, backends.identity);
    const db = new pg.Client({ connectionString: settings.databaseUrl });
    await db.connect();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-scanner-'));
    const removeFiles = () => rmSync(dir, { recursive: true, force: true });
    process.once('exit', removeFiles);
    try {
      // One credit per connection of a scanned project: the large scan, a warm-up and both throughput runs.
      const credits = 1 + 2 + settings.smallScans * 2;
      await identityClient.grantScanCredits({ teamId: settings.teamId, credits: BigInt(credits) });
      const largeProject = await projectWithData(dir, 'scan-large', settings.scanRows);
      const smallProject = await projectWithData(dir, 'scan-small', smallRows);
      await startWorker();
      // A warm-up scan: the worker's first scan loads its code paths and connections.
      await throughput(smallProject, db, 2);
      const large = await largeScan(largeProject);
      const one = await throughput(smallProject, db);
      await startWorker();
      const two = await throughput(smallProject, db);
      const ratio = two.scansPerSecond / one.scansPerSecond;
      progress(`cost posture: GET /v1/guard/cost-posture at 20 connections`);
      const posture = await measure(
        { name: 'cost posture', url: `${gateway.url}/v1/guard/cost-posture`, headers: auth, connections: 20 },
        settings.load,
      );
      // The same read for the small project alone: whether the time goes with the data the team holds.
      progress(
        `cost posture of the small project: GET /v1/guard/cost-posture?project_id=... at 20 connections`,
      );
      const projectPosture = await measure(
        {
          name: 'cost posture (project)',
          url: `${gateway.url}/v1/guard/cost-posture?project_id=${smallProject}`,
          headers: auth,
          connections: 20,
        },
        settings.load,
      );
      return {
        cores,
        largeScan: large,
        throughput: {
          one,
          two,
          ratio,
          verdict: ratio >= scannerTargets.workerRatio ? 'PASS' : 'BELOW',
        },
        posture: {
          connections: 20,
          requestsPerSecond: posture.requestsPerSecond,
          p50Ms: posture.p50Ms,
          p99Ms: posture.p99Ms,
          requests: posture.requests,
          verdict: posture.p99Ms < scannerTargets.postureP99Ms ? 'PASS' : 'BELOW',
        },
        projectPosture: {
          connections: 20,
          requestsPerSecond: projectPosture.requestsPerSecond,
          p50Ms: projectPosture.p50Ms,
          p99Ms: projectPosture.p99Ms,
          requests: projectPosture.requests,
        },
      };
    } finally {
      process.off('exit', removeFiles);
      await rm(dir, { recursive: true, force: true });
      identityClient.close();
      await db.end();
    }
  };
}
