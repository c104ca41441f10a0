/**
 * `npm run bench`: GET /v1/guard/projects/:id through the gateway and gRPC (every service its own
 * process) against a single-process express + pg handler, on the same fresh Postgres database and rows.
 * Progress goes to stderr; the table and one `BENCH_RESULT {...}` line to stdout.
 */
import os from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { newId } from '@costgov/ids';
import { uniqueName } from '@costgov/testing';
import { startBaseline, startFullPath, type Proc } from './processes';
import { figuresOf, printReport, summarize } from './report';

const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const durationSeconds = positiveInt('BENCH_DURATION', 10);
const connections = positiveInt('BENCH_CONNECTIONS', 32);
const warmUpSeconds = positiveInt('BENCH_WARMUP', 3);
const seededProjects = 1_000;
/** The bootstrap key of team `default`: the prefix and 40 base62 characters. */
const apiKey = `cg_live_${'bench'.padEnd(40, '0')}`;
const auth = { authorization: `Bearer ${apiKey}` };

const progress = (message: string) => console.error(`[bench] ${message}`);

function positiveInt(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`${name} must be a positive integer, not '${process.env[name]}'`);
  return value;
}

async function withClient<T>(connectionString: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/**
 * One project through the REST API (the measured one, with three budgets added in SQL), then
 * `seededProjects` more with a budget each in one bulk insert, so the tables are not trivially small.
 */
async function seed(gatewayUrl: string, databaseUrl: string): Promise<{ projectId: string; teamId: string }> {
  const created = await fetch(`${gatewayUrl}/v1/guard/projects`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', connection_ids: [] }),
  });
  if (created.status !== 201)
    throw new Error(`POST /v1/guard/projects answered ${created.status}: ${await created.text()}`);
  const projectId = ((await created.json()) as { data: { id: string } }).data.id;

  return withClient(databaseUrl, async (db) => {
    const { rows } = await db.query<{ team_id: string }>(
      'SELECT team_id FROM budgets.projects WHERE id = $1',
      [projectId],
    );
    const teamId = rows[0]!.team_id;
    const projectIds = Array.from({ length: seededProjects }, () => newId('project'));
    await db.query(
      `INSERT INTO budgets.projects (id, team_id, name)
       SELECT id, $2, 'seeded-' || n FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`,
      [projectIds, teamId],
    );
    const budgets = [
      [projectId, 'compute', 5000, 'USD', 'monthly', 'active', 1234.5],
      [projectId, 'storage', 1200, 'USD', 'quarterly', 'breached', 1300],
      [projectId, 'legacy', 100, 'EUR', 'yearly', 'archived', 0],
      ...projectIds.map((id) => [id, 'monthly', 1000, 'USD', 'monthly', 'active', 10]),
    ];
    const column = (i: number) => budgets.map((b) => b[i]);
    await db.query(
      `INSERT INTO budgets.budgets (id, team_id, project_id, name, amount, currency, period, status, current_spend)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::numeric[], $6::text[], $7::text[], $8::text[], $9::numeric[])`,
      [budgets.map(() => newId('budget')), budgets.map(() => teamId), ...[0, 1, 2, 3, 4, 5, 6].map(column)],
    );
    await db.query('ANALYZE budgets.projects, budgets.budgets');
    return { projectId, teamId };
  });
}

/** Both targets must answer the measured request with the same body, or the comparison means nothing. */
async function checkSameAnswer(urls: Record<'baseline' | 'fullPath', string>, path: string): Promise<void> {
  const [baseline, fullPath] = await Promise.all(
    [urls.baseline, urls.fullPath].map(async (url) => {
      const response = await fetch(`${url}${path}`, { headers: auth });
      if (response.status !== 200)
        throw new Error(`GET ${url}${path} answered ${response.status}: ${await response.text()}`);
      return response.json();
    }),
  );
  if (!isDeepStrictEqual(baseline, fullPath)) {
    throw new Error(
      `the targets answer differently:\nbaseline:  ${JSON.stringify(baseline)}\nfull path: ${JSON.stringify(fullPath)}`,
    );
  }
}

async function load(name: string, url: string, seconds: number): Promise<autocannon.Result> {
  const result = await autocannon({ url, connections, duration: seconds, headers: auth });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${name}: ${result.non2xx} non-2xx responses, ${result.errors} errors, ${result.timeouts} timeouts ` +
        `of ${result.requests.sent} requests (status codes: ${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  return result;
}

async function measure(name: string, url: string) {
  progress(`warm-up ${name} (${warmUpSeconds} s)`);
  await load(`${name} warm-up`, url, warmUpSeconds);
  progress(`measuring ${name} (${durationSeconds} s, ${connections} connections)`);
  return figuresOf(await load(name, url, durationSeconds));
}

async function main(): Promise<void> {
  const database = uniqueName('bench');
  const databaseUrl = Object.assign(new URL(serverUrl), { pathname: `/${database}` }).toString();
  const procs: Proc[] = [];
  let cleaning: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      progress(`stopping ${procs.length} processes, dropping database ${database}`);
      await Promise.all(procs.map((p) => p.stop()));
      try {
        await withClient(serverUrl, (admin) =>
          admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`),
        );
      } catch (error) {
        progress(`could not drop database ${database}: ${String(error)}`);
        process.exitCode = 1;
      }
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`${signal}: cleaning up`);
      void cleanUp().finally(() => process.exit(130));
    });
  }

  try {
    progress(`creating database ${database}`);
    await withClient(serverUrl, (admin) => admin.query(`CREATE DATABASE ${database}`));
    progress(
      `starting identity, budgets, violations and gateway${process.env.NATS_URL ? ' (NATS)' : ' (in-process bus)'}`,
    );
    const gatewayUrl = await startFullPath({ databaseUrl, namespace: uniqueName('bench'), apiKey }, procs);
    progress(`seeding 1 project over REST and ${seededProjects} in SQL`);
    const { projectId, teamId } = await seed(gatewayUrl, databaseUrl);
    progress('starting baseline');
    const baselineUrl = await startBaseline({ databaseUrl, apiKey, teamId }, procs);

    const path = `/v1/guard/projects/${projectId}`;
    await checkSameAnswer({ baseline: baselineUrl, fullPath: gatewayUrl }, path);
    const baseline1 = await measure('baseline', `${baselineUrl}${path}`);
    const fullPath = await measure('full path', `${gatewayUrl}${path}`);
    const baseline2 = await measure('baseline again', `${baselineUrl}${path}`);
    printReport(
      summarize(
        { baseline1, fullPath, baseline2 },
        { durationSeconds, warmUpSeconds, connections, cpus: os.availableParallelism() },
      ),
    );
  } finally {
    await cleanUp();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(
      `[bench] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    process.exit(1);
  },
);
