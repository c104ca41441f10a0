import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

const bootstrapKey = 'cg_live_logstestbootstrapkey000000000000';
const lines: string[] = [];
const sink = new Writable({
  write: (chunk, _enc, done) => (lines.push(...chunk.toString().split('\n').filter(Boolean)), done()),
});
let system: RunningSystem;

/** The top-level keys of a JSON object text in order, repeats included (JSON.parse keeps only the last). */
function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      let end = i + 1;
      while (line[end] !== '"') end += line[end] === '\\' ? 2 : 1;
      if (depth === 1 && line[end + 1] === ':') keys.push(JSON.parse(line.slice(i, end + 1)) as string);
      i = end;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return keys;
}

beforeAll(async () => {
  // Every service in one process under the process logger `costgov`, as `npm start` runs them.
  const logger = createLogger('costgov', 'info', sink);
  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: bootstrapKey },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(createLogger('test', 'silent')),
  });
});

afterAll(() => system?.stop());

const parsed = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

describe('log lines of the embedded process', () => {
  it('are JSON objects with every key once, and a service line names its service', () => {
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const keys = topLevelKeys(line);
      expect(
        keys.filter((key, i) => keys.indexOf(key) !== i),
        line,
      ).toEqual([]);
    }
    expect(
      parsed().find((line) => line.msg === 'service started' && line.service === 'identity'),
    ).toBeDefined();
  });
});

describe('the access log', () => {
  it('writes one line per request with request id, method, route, status, duration and team', async () => {
    const requestId = 'req_accesslogtest0001';
    const response = await fetch(`${system.url}/v1/guard/projects?per_page=5`, {
      headers: { authorization: `Bearer ${bootstrapKey}`, 'x-request-id': requestId },
    });
    expect(response.status).toBe(200);
    const entries = await eventually(() => {
      const found = parsed().filter((line) => line.request_id === requestId && line.msg === 'request');
      return found.length > 0 ? found : undefined;
    }, 5_000);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      service: 'costgov',
      method: 'GET',
      status: 200,
      team_id: system.bootstrap!.teamId,
    });
    expect(entries[0]!.route).toMatch(/^\/v1\/guard\/projects\/?$/); // the pattern, not the URL
    expect(typeof entries[0]!.duration_ms).toBe('number');
  });

  it('logs a refused request too, and never a credential or header', async () => {
    const secret = 'cg_live_accesslognotlogged0000000000000000';
    const requestId = 'req_accesslogtest0002';
    const response = await fetch(`${system.url}/v1/guard/projects`, {
      headers: { authorization: `Bearer ${secret}`, 'x-request-id': requestId },
    });
    expect(response.status).toBe(401);
    const entries = await eventually(() => {
      const found = parsed().filter((line) => line.request_id === requestId && line.msg === 'request');
      return found.length > 0 ? found : undefined;
    }, 5_000);
    expect(entries[0]).toMatchObject({ method: 'GET', status: 401 });
    expect(entries[0]!.team_id).toBeUndefined();
    const all = lines.join('\n');
    expect(all).not.toContain(secret);
    expect(all).not.toContain(bootstrapKey);
    expect(all.toLowerCase()).not.toContain('authorization');
  });
});
