import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { variablesOf } from '@costgov/config';
import { standaloneConfig } from '@costgov/runtime';
import { telemetryConfig } from '@costgov/telemetry';
import { freePort, repoRoot, startProcess, type Proc } from '@costgov/testing';
import { embeddedConfig } from '../src/system';

/** The variables named in the first column of docs/configuration.md's tables. */
function documentedVariables(): string[] {
  const text = readFileSync(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
  const names = text
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!));
  return [...new Set(names)].sort();
}

/** Every variable a schema reads: `npm start`'s (gateway and services), a service on its own, tracing. */
const schemaVariables = [
  ...new Set([embeddedConfig, standaloneConfig(0), telemetryConfig].flatMap(variablesOf)),
].sort();

describe('docs/configuration.md', () => {
  it('lists a good number of variables (the tables were read)', () => {
    expect(documentedVariables().length).toBeGreaterThan(50);
  });

  it('documents no variable that no schema reads', () => {
    expect(documentedVariables().filter((name) => !schemaVariables.includes(name))).toEqual([]);
  });

  it('documents every variable a schema reads', () => {
    expect(schemaVariables.filter((name) => !documentedVariables().includes(name))).toEqual([]);
  });
});

const procs: Proc[] = [];
afterAll(() => Promise.all(procs.map((proc) => proc.stop())));

const exitOf = (proc: Proc): Promise<number | null> =>
  proc.child.exitCode !== null
    ? Promise.resolve(proc.child.exitCode)
    : new Promise((resolve) => proc.child.once('exit', (code) => resolve(code)));

/** Where each root would listen, were it to start: free ports, no outside storage or bus. */
async function rootEnv(): Promise<NodeJS.ProcessEnv> {
  const [port, metrics, grpc] = await Promise.all([freePort(), freePort(), freePort()]);
  return {
    PORT: `${port}`,
    HOST: '127.0.0.1',
    METRICS_PORT: `${metrics}`,
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: `${grpc}`,
    DATA_DIR: 'memory',
    DATABASE_URL: '',
    NATS_URL: '',
    REDIS_URL: '',
    LOG_LEVEL: 'info',
  };
}

describe('a wrong value ends the process before it starts anything, naming the variable', () => {
  it.each([
    [
      'npm start',
      'services/embedded/src/main.ts',
      { BUDGET_EVALUATION_INTERVAL_MS: 'soon', OAUTH_CLOCK_SKEW_SECONDS: 'sixty' },
      ['BUDGET_EVALUATION_INTERVAL_MS: Invalid input: expected number', 'OAUTH_CLOCK_SKEW_SECONDS:'],
    ],
    [
      'budgets on its own',
      'services/budgets/src/main.ts',
      { BUDGETS_PROJECT_CACHE: 'yes' },
      ['BUDGETS_PROJECT_CACHE: Invalid option: expected one of "on"|"off"'],
    ],
    [
      'identity on its own',
      'services/identity/src/main.ts',
      { OAUTH_CLOCK_SKEW_SECONDS: 'sixty' },
      ['OAUTH_CLOCK_SKEW_SECONDS: Invalid input: expected number'],
    ],
  ])('%s', { timeout: 90_000 }, async (_root, entry, wrong, messages) => {
    const proc = startProcess(path.basename(path.dirname(path.dirname(entry))), entry, {
      ...(await rootEnv()),
      ...wrong,
    });
    procs.push(proc);
    expect(await exitOf(proc)).toBe(78);
    for (const message of messages) expect(proc.output()).toContain(message);
    expect(proc.output()).not.toMatch(/applied migrations|service started|listening/);
  });
});
