import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '@costgov/testing';
import { run } from '../src';
import type { IngestedFile } from '../src/commands/ingest';
import { jsonOf, stackFrame, type CliResult } from './cli';

/** One upload as the stand-in API received it. */
interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

let server: Server;
let url = '';
let dir = '';
let received: Received[] = [];
let answer: (upload: Received, res: ServerResponse) => void;

/** The billing period an upload answers: a month of its own, from September 2024 on, in the order received. */
const periodOf = (upload: Received) => `2024-${String(9 + received.indexOf(upload)).padStart(2, '0')}-01`;

const summaryOf = (upload: Received) => ({
  connection_id: decodeURIComponent(upload.path.split('/')[4]!),
  rows: upload.body.toString().split('\n').length - 2,
  focus_version: '1.0',
  billing_periods: [periodOf(upload)],
  billing_period_ranges: [{ start: '2024-09-01T00:00:00.000Z', end: '2024-10-01T00:00:00.000Z' }],
  totals: [{ currency: 'USD', billed_cost: 12.5, effective_cost: 11.25 }],
  rows_replaced: 0,
  bytes: upload.body.byteLength,
  duration_ms: 1500,
  warnings: [
    {
      code: 'future_charges',
      message: '2 rows are charged in the future',
      details: { rows: '2', latest_charge_period_start: '2099-01-01T00:00:00Z' },
    },
  ],
});

const ok = (upload: Received, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: summaryOf(upload) }));
};

beforeAll(async () => {
  // Stands in for the gateway: reads the whole body, then answers as the test says.
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const upload = { path: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
      received.push(upload);
      answer(upload, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = await mkdtemp(join(tmpdir(), 'costgov-ingest-'));
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  received = [];
  answer = ok;
});

/** The CLI run in this process, its output captured; stderr is a TTY when `tty` says so. */
async function cli(
  argv: string[],
  { tty = false, env = { COSTGOV_URL: url, COSTGOV_API_KEY: 'cg_live_k' } as Record<string, string> } = {},
) {
  const result = { stdout: '', stderr: '' };
  const stderr = {
    write: (text: string) => (result.stderr += text),
    ...(tty
      ? { isTTY: true, columns: 120, cursorTo: () => true, clearLine: () => true, moveCursor: () => true }
      : {}),
  };
  const code = await run(argv, { stdout: { write: (text: string) => (result.stdout += text) }, stderr, env });
  return { code, ...result } as CliResult;
}

const csv = (rows: number) =>
  `BilledCost,EffectiveCost,BillingCurrency\n${Array.from({ length: rows }, (_, i) => `${i},${i},USD`).join('\n')}\n`;

async function file(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

describe('costgov ingest: arguments', () => {
  it('needs --connection and a path (usage errors, exit 2)', async () => {
    const path = await file('one.csv', csv(2));
    const noConnection = await cli(['ingest', path]);
    expect(noConnection.code).toBe(2);
    expect(noConnection.stderr).toMatch(/required option '--connection <connection-id>' not specified/);
    const noPath = await cli(['ingest', '--connection', 'con_1']);
    expect(noPath.code).toBe(2);
    expect(noPath.stderr).toMatch(/missing required argument 'path'/);
    expect(received).toEqual([]);
  });

  it('refuses a path that does not exist, and a folder without .csv or .csv.gz files (exit 2)', async () => {
    const missing = await cli(['ingest', join(dir, 'nope.csv'), '--connection', 'con_1']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: no such file or folder: .*nope\.csv$/m);
    const empty = join(dir, 'empty');
    await mkdir(empty, { recursive: true });
    await writeFile(join(empty, 'notes.txt'), 'not cost data');
    const none = await cli(['ingest', empty, '--connection', 'con_1']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^error: no \.csv or \.csv\.gz files in .*empty$/m);
    expect(received).toEqual([]);
  });

  it('needs an API key (--api-key or COSTGOV_API_KEY)', async () => {
    const path = await file('one.csv', csv(2));
    const result = await cli(['ingest', path, '--connection', 'con_1'], { env: { COSTGOV_URL: url } });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/an API key is needed/);
    const given = await cli(['ingest', path, '--connection', 'con_1', '--api-key', 'cg_live_given'], {
      env: { COSTGOV_URL: url },
    });
    expect(given.code).toBe(0);
    expect(received[0]!.headers.authorization).toBe('Bearer cg_live_given');
  });
});

describe('costgov ingest: uploads (non-TTY output)', () => {
  it('streams one file as text/csv with its length, and prints the summary and plain progress lines', async () => {
    const content = csv(3);
    const path = await file('sep.csv', content);
    const result = await cli(['ingest', path, '--connection', 'con 1/x']);
    expect(result.code, result.stderr).toBe(0);
    expect(received).toHaveLength(1);
    const [upload] = received;
    expect(upload!.path).toBe('/v1/guard/connections/con%201%2Fx/cost-data');
    expect(upload!.headers).toMatchObject({
      authorization: 'Bearer cg_live_k',
      'content-type': 'text/csv',
      'content-length': String(Buffer.byteLength(content)),
    });
    expect(upload!.body.toString()).toBe(content);
    expect(result.stdout).toMatch(new RegExp(`^file: +${path.replaceAll('\\', '\\\\')}$`, 'm'));
    expect(result.stdout).toMatch(/^rows: +3$/m);
    expect(result.stdout).toMatch(/^billing periods: +2024-09-01$/m);
    expect(result.stdout).toMatch(/^totals: +USD billed 12\.50, effective 11\.25$/m);
    expect(result.stdout).toMatch(/^duration: +1\.5 s$/m);
    expect(result.stdout).toMatch(/^warnings: +future_charges: 2 rows are charged in the future$/m);
    expect(result.stderr).toMatch(/: sending \d+ B\n/);
    expect(result.stderr).toMatch(/: sent \d+ B in \d+\.\d s \(.+\/s\); waiting for the summary\n/);
  });

  it('reports progress of a larger file in tenths, in order', async () => {
    const path = await file('big.csv', Buffer.alloc(2 * 1024 * 1024, 'x'));
    const result = await cli(['ingest', path, '--connection', 'con_1']);
    expect(result.code, result.stderr).toBe(0);
    const percents = [...result.stderr.matchAll(/: (\d+)% sent \((\S+ \S+) of 2\.0 MiB, .+\/s\)/g)].map((m) =>
      Number(m[1]),
    );
    expect(percents).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(received[0]!.body.byteLength).toBe(2 * 1024 * 1024);
  });

  it('uploads every .csv and .csv.gz of a folder by name, gzip as application/gzip, and prints JSON with --json', async () => {
    const folder = join(dir, 'exports');
    await mkdir(join(folder, 'nested.csv'), { recursive: true }); // a folder, not a file: skipped
    const gzipped = gzipSync(csv(4));
    await writeFile(join(folder, '2024-10.csv.gz'), gzipped);
    await writeFile(join(folder, '2024-09.csv'), csv(2));
    await writeFile(join(folder, 'README.md'), '# not cost data');
    const result = await cli(['ingest', folder, '--connection', 'con_1', '--json']);
    const files = jsonOf<IngestedFile[]>(result);
    expect(files.map((f) => f.file)).toEqual([join(folder, '2024-09.csv'), join(folder, '2024-10.csv.gz')]);
    expect(received.map((r) => r.headers['content-type'])).toEqual(['text/csv', 'application/gzip']);
    expect(received[1]!.body.equals(gzipped)).toBe(true);
    expect(files[0]).toMatchObject({ connection_id: 'con_1', rows: 2, focus_version: '1.0' });
  });

  it('reports a refused file with the row and column details, still sends the others, and exits 1', async () => {
    const folder = join(dir, 'mixed');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'a.csv'), 'BilledCost\nabc\n');
    await writeFile(join(folder, 'b.csv'), csv(1));
    answer = (upload, res) => {
      if (!upload.body.toString().includes('abc')) return ok(upload, res);
      res.writeHead(422, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: {
            code: 'validation_error',
            message: 'The file is not valid FOCUS; nothing was stored.',
            details: [{ field: 'row 2, column BilledCost', message: "'abc' is not a decimal number" }],
          },
        }),
      );
    };
    const result = await cli(['ingest', folder, '--connection', 'con_1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `error: ${join(folder, 'a.csv')}: The file is not valid FOCUS; nothing was stored.\n` +
        "  row 2, column BilledCost: 'abc' is not a decimal number\n",
    );
    expect(result.stderr).toMatch(/^error: 1 of 2 files were not stored: .*a\.csv$/m);
    expect(received).toHaveLength(2);
    expect(result.stdout).toMatch(/^file: +.*b\.csv$/m);
    expect(result.stdout).not.toMatch(/a\.csv/);
    expect(result.stderr).not.toMatch(stackFrame);
  });

  it('says when a file replaced a billing period an earlier file of the run stored, and exits 1', async () => {
    const folder = join(dir, 'split');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'part-1.csv'), csv(2));
    await writeFile(join(folder, 'part-2.csv'), csv(3));
    // Both parts hold September: the second upload replaced the first one's rows.
    answer = (upload, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ data: { ...summaryOf(upload), billing_periods: ['2024-09-01'] } }));
    const result = await cli(['ingest', folder, '--connection', 'con_1']);
    expect(result.code).toBe(1);
    expect(received).toHaveLength(2);
    expect(result.stderr).toContain(
      `error: ${join(folder, 'part-2.csv')} replaced billing period 2024-09-01 that ${join(folder, 'part-1.csv')} had stored`,
    );
    expect(result.stderr).toMatch(/send them together: costgov ingest DIR --parts$/m);
  });

  it('sends the parts of one export as one upload with --parts: gzip members one after another', async () => {
    const folder = join(dir, 'parts-gz');
    await mkdir(folder, { recursive: true });
    const parts = [csv(3), csv(2)];
    const gzipped = parts.map((part) => gzipSync(part));
    await writeFile(join(folder, 'part-00001.csv.gz'), gzipped[0]!);
    await writeFile(join(folder, 'part-00002.csv.gz'), gzipped[1]!);
    const result = await cli(['ingest', folder, '--connection', 'con_1', '--parts', '--json']);
    expect(result.code).toBe(0);
    expect(received).toHaveLength(1);
    const [upload] = received;
    expect(upload!.headers['content-type']).toBe('application/gzip');
    expect(Number(upload!.headers['content-length'])).toBe(upload!.body.byteLength);
    // Each part whole, a line break between them: what the API reads as one file (repeated header skipped).
    expect(gunzipSync(upload!.body).toString()).toBe(`${parts[0]}\n${parts[1]}`);
    expect(jsonOf<IngestedFile[]>(result).map((f) => f.file)).toEqual([`${folder} (2 parts)`]);
  });

  it('puts the parts’ own line break between them: CRLF parts, the last without one', async () => {
    const folder = join(dir, 'parts-crlf');
    await mkdir(folder, { recursive: true });
    const crlf = (rows: number) => csv(rows).replaceAll('\n', '\r\n');
    const parts = [crlf(2), crlf(3).replace(/\r\n$/, '')];
    await writeFile(join(folder, 'a.csv'), parts[0]!);
    await writeFile(join(folder, 'b.csv'), parts[1]!);
    const result = await cli(['ingest', folder, '--connection', 'con_1', '--parts']);
    expect(result.code).toBe(0);
    expect(received).toHaveLength(1);
    expect(received[0]!.body.toString()).toBe(`${parts[0]}\r\n${parts[1]}`);
    expect(Number(received[0]!.headers['content-length'])).toBe(received[0]!.body.byteLength);
  });

  it('names the part and its own line of a problem in an upload of parts', async () => {
    const folder = join(dir, 'parts-bad');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'a.csv'), csv(2));
    await writeFile(join(folder, 'b.csv'), 'BilledCost,EffectiveCost,BillingCurrency\nabc,1,USD\n');
    // The body's lines: a.csv 1 to 3, the blank line between parts 4, b.csv 5 and 6 (its row abc).
    answer = (_upload, res) =>
      res.writeHead(422, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: {
            code: 'validation_error',
            message: 'The file is not valid FOCUS; nothing was stored.',
            details: [
              { field: 'row 5 (line 6), column BilledCost', message: "'abc' is not a decimal number" },
            ],
          },
        }),
      );
    const result = await cli(['ingest', folder, '--connection', 'con_1', '--parts']);
    expect(result.code).toBe(1);
    expect(received).toHaveLength(1);
    expect(result.stderr).toContain(
      `error: ${folder} (2 parts): The file is not valid FOCUS; nothing was stored.\n` +
        "  b.csv line 2, column BilledCost (row 5 of the upload): 'abc' is not a decimal number\n",
    );
  });

  it('refuses --parts over plain and gzip files together (exit 2)', async () => {
    const folder = join(dir, 'parts-mixed');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'a.csv'), csv(1));
    await writeFile(join(folder, 'b.csv.gz'), gzipSync(csv(1)));
    const result = await cli(['ingest', folder, '--connection', 'con_1', '--parts']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /--parts sends the files as one body: they must be all \.csv or all \.csv\.gz/,
    );
    expect(received).toHaveLength(0);
  });

  it('stops with exit 3 when the API cannot be reached', async () => {
    const path = await file('one.csv', csv(1));
    const result = await cli([
      'ingest',
      path,
      '--connection',
      'con_1',
      '--url',
      `http://127.0.0.1:${await freePort()}`,
    ]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(
      /^error: cannot reach the API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/m,
    );
  });

  it('draws a bar on a terminal instead of lines', async () => {
    const path = await file('tty.csv', Buffer.alloc(256 * 1024, 'y'));
    const result = await cli(['ingest', path, '--connection', 'con_1'], { tty: true });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/tty\.csv \[=+\] 100% \| 256\.0 KiB of 256\.0 KiB \| .+\/s/);
    expect(result.stderr).not.toMatch(/% sent \(/);
  });
});
