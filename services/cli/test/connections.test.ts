import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, systemConfig, type RunningSystem } from '@costgov/embedded';
import { loadConfig } from '@costgov/config';
import { focusCsv } from '@costgov/costs';
import { createLogger } from '@costgov/log';
import { freePort, freshDb, testBus } from '@costgov/testing';
import { run } from '../src';
import type { ConnectionView } from '../src/views';
import { jsonOf, stackFrame, type CliResult } from './cli';

const logger = createLogger('test', 'silent');
const apiKey = 'cg_live_cliconnectionsbootstrapkey0000000000';
let system: RunningSystem;

/** The CLI run in this process with the given environment, its output captured. */
async function cliWith(env: Record<string, string | undefined>, ...argv: string[]): Promise<CliResult> {
  const result = { stdout: '', stderr: '' };
  const code = await run(argv, {
    stdout: { write: (text: string) => (result.stdout += text) },
    stderr: { write: (text: string) => (result.stderr += text) },
    env,
  });
  return { code, ...result };
}

const cli = (...argv: string[]) => cliWith({ COSTGOV_URL: system.url, COSTGOV_API_KEY: apiKey }, ...argv);

beforeAll(async () => {
  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: apiKey },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
});

afterAll(() => system?.stop());

describe('costgov connections (REST API)', () => {
  it('creates, shows, lists, updates and deletes a connection', async () => {
    const created = await cli('connections', 'create', 'aws-prod', '--provider', 'aws');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^id: +con_\w+$/m);
    expect(created.stdout).toMatch(/^provider: +aws$/m);
    expect(created.stdout).toMatch(/^last ingested: +never$/m);
    const id = /^id: +(con_\w+)$/m.exec(created.stdout)![1]!;

    const shown = jsonOf<ConnectionView>(await cli('connections', 'get', id, '--json'));
    expect(shown).toMatchObject({
      id,
      name: 'aws-prod',
      provider: 'aws',
      status: 'active',
      lastIngestedAt: null,
    });

    const table = await cli('connections', 'list');
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +NAME +PROVIDER +STATUS +LAST INGESTED$/);
    expect(table.stdout).toMatch(new RegExp(`^${id} +aws-prod +aws +active +never$`, 'm'));

    const updated = jsonOf<ConnectionView>(
      await cli('connections', 'update', id, '--name', 'aws-production', '--status', 'disabled', '--json'),
    );
    expect(updated).toMatchObject({ id, name: 'aws-production', status: 'disabled' });

    const deleted = await cli('connections', 'delete', id, '--quiet');
    expect(deleted).toEqual({ code: 0, stdout: `${id}\n`, stderr: '' });
    const gone = await cli('connections', 'get', id);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^error: Connection '.+' was not found\.$/m);
  });

  it('filters the list and prints only ids with --quiet', async () => {
    const ids = [];
    for (const name of ['gcp-a', 'gcp-b'])
      ids.push((await cli('connections', 'create', name, '--provider', 'gcp', '--quiet')).stdout.trim());
    await cli('connections', 'create', 'azure-a', '--provider', 'azure', '--quiet');
    const gcp = await cli('connections', 'list', '--provider', 'gcp', '--quiet');
    expect(gcp.stdout).toBe(`${ids[1]}\n${ids[0]}\n`);
    const paged = await cli('connections', 'list', '--provider', 'gcp', '--per-page', '1');
    expect(paged.stderr).toMatch(/page 1 of 2 \(2 connections\); --page 2 for more/);
    const second = await cli(
      'connections',
      'list',
      '--provider',
      'gcp',
      '--per-page',
      '1',
      '--page',
      '2',
      '--json',
    );
    expect(jsonOf<ConnectionView[]>(second).map((c) => c.id)).toEqual([ids[0]]);
  });

  it('prints the API refusal with its field details and exits 1', async () => {
    await cli('connections', 'create', 'billing', '--provider', 'oci');
    const duplicate = await cli('connections', 'create', 'BILLING', '--provider', 'oci');
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toMatch(/^error: A connection named 'BILLING' already exists in this team\.$/m);
    expect(duplicate.stderr).toMatch(/^ {2}name: is taken$/m);
    const long = await cli('connections', 'create', 'x'.repeat(201), '--provider', 'oci');
    expect(long.code).toBe(1);
    expect(long.stderr).toMatch(/name/);
    expect(long.stderr).not.toMatch(stackFrame);
  });

  it('takes --url and --api-key over the environment', async () => {
    const result = await cliWith(
      { COSTGOV_URL: 'http://127.0.0.1:9', COSTGOV_API_KEY: 'cg_live_wrongwrongwrongwrongwrongwrong00' },
      'connections',
      'list',
      '--url',
      system.url,
      '--api-key',
      apiKey,
      '--json',
    );
    expect(result.code).toBe(0);
    expect(Array.isArray(JSON.parse(result.stdout))).toBe(true);
  });

  it('refuses a wrong key (exit 1), a missing key (exit 1) and an unreachable gateway (exit 3)', async () => {
    const wrong = await cliWith(
      { COSTGOV_URL: system.url, COSTGOV_API_KEY: 'cg_live_wrongwrongwrongwrongwrongwrong00' },
      'connections',
      'list',
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^error: /);
    const missing = await cliWith({ COSTGOV_URL: system.url }, 'connections', 'list');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/--api-key or set COSTGOV_API_KEY/);
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await cliWith(
      { COSTGOV_URL: nowhere, COSTGOV_API_KEY: apiKey },
      'connections',
      'list',
    );
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(`cannot reach the API at ${nowhere}`);
  });

  it.each([
    [['connections', 'create', 'x'], /required option '--provider <provider>' not specified/],
    [['connections', 'create', 'x', '--provider', 'ibm'], /argument 'ibm' is invalid/],
    [['connections', 'list', '--status', 'paused'], /argument 'paused' is invalid/],
    [['connections', 'list', '--per-page', '101'], /argument '101' is invalid/],
    [['connections', 'update', 'con_x'], /give at least one of --name, --status/],
    [['connections', 'get'], /missing required argument 'connection-id'/],
    [
      ['connections', 'list', '--url', 'localhost:8080'],
      /'--url <url>' argument 'localhost:8080' is invalid/,
    ],
  ])('%j is a usage error (exit 2) and calls nothing', async (argv, message) => {
    const result = await cliWith({ COSTGOV_URL: 'http://127.0.0.1:9', COSTGOV_API_KEY: apiKey }, ...argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});

describe('costgov ingest --parts (REST API)', () => {
  it('stores an export in CRLF gzip parts whole, with the totals of the file; sent one by one it says so', async () => {
    const created = await cli('connections', 'create', 'aws-parts', '--provider', 'aws', '--quiet');
    const id = created.stdout.trim();
    const file = Buffer.concat(
      (await focusCsv({ rows: 900, month: '2025-08', seed: 9, version: '1.2' }).toArray()) as Buffer[],
    ).toString('utf8');
    const [header, ...rows] = file.trimEnd().split('\n');
    // The test's own sums of the file, per currency, to the cent.
    const records = parse(file, { columns: true }) as Array<Record<string, string>>;
    expect(records).toHaveLength(rows.length); // one line a row: the parts split between rows
    const sums = new Map<string, number>();
    for (const record of records) {
      const currency = record.BillingCurrency!;
      sums.set(currency, (sums.get(currency) ?? 0) + Number(record.BilledCost));
    }
    const folder = await mkdtemp(join(tmpdir(), 'costgov-parts-'));
    try {
      const parts = [rows.slice(0, 400), rows.slice(400)];
      for (const [index, part] of parts.entries())
        await writeFile(
          join(folder, `part-${index}.csv.gz`),
          gzipSync(`${header}\r\n${part.join('\r\n')}\r\n`),
        );
      const result = await cli('ingest', folder, '--connection', id, '--parts', '--json');
      expect(result.code, result.stderr).toBe(0);
      const [stored] =
        jsonOf<Array<{ rows: number; totals: Array<{ currency: string; billed_cost: number }> }>>(result);
      expect(stored!.rows).toBe(900);
      for (const total of stored!.totals) expect(total.billed_cost).toBeCloseTo(sums.get(total.currency)!, 2);

      // The same parts one by one: the second replaced the first's period, and the run says so.
      const oneByOne = await cli('ingest', folder, '--connection', id);
      expect(oneByOne.code).toBe(1);
      expect(oneByOne.stderr).toMatch(
        /part-1\.csv\.gz replaced billing period 2025-08-01 that .*part-0\.csv\.gz had stored/,
      );
      expect(oneByOne.stdout).toMatch(/replaced_recent_upload/);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
