// temporary probe, deleted after use
import autocannon from 'autocannon';
import pg from 'pg';
import { uniqueName } from '@costgov/testing';
import { startFullPath, type Proc } from './processes';

async function main() {
  const database = uniqueName('bench');
  const server = 'postgres://postgres@127.0.0.1:5432/postgres';
  const databaseUrl = `postgres://postgres@127.0.0.1:5432/${database}`;
  const admin = new pg.Client({ connectionString: server }); await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const procs: Proc[] = [];
  const apiKey = `cg_live_${'bench'.padEnd(40, '0')}`;
  try {
    const url = await startFullPath({ databaseUrl, namespace: uniqueName('b'), apiKey }, procs);
    const created = await fetch(`${url}/v1/guard/projects`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: '{"name":"x"}' });
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    for (const path of [`/v1/guard/projects/${id}`, '/healthz', `/v1/guard/projects/${id}`, '/healthz']) {
      for (let i = 0; i < Number(process.env.ROUNDS ?? 4); i++) {
        const r = await autocannon({ url: url + path, connections: 32, duration: 5, headers: { authorization: `Bearer ${apiKey}` } });
        console.log(path.slice(0, 20), i, r.requests.average, r.latency.p50, r.latency.p99, r.non2xx);
      }
    }
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await admin.query(`DROP DATABASE ${database} WITH (FORCE)`); await admin.end();
  }
}
void main();
