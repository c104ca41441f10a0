import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, repoRoot } from '@costgov/testing';

let child: ChildProcess | undefined;
const dataDir = mkdtempSync(path.join(tmpdir(), 'costgov-stdout-'));
afterAll(() => {
  child?.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start (every service in one process)', () => {
  it(
    'writes only JSON log lines to stdout; the banner and the generated key go to stderr',
    { timeout: 240_000 },
    async () => {
      // Every gRPC address its own free port: the defaults (50051-50057) may be taken on a shared machine.
      const [port, metrics, identity, budgets, violations, costs, scanner, notifier] = await Promise.all(
        Array.from({ length: 8 }, freePort),
      );
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PORT: `${port}`,
        HOST: '127.0.0.1',
        METRICS_PORT: `${metrics}`,
        IDENTITY_ADDR: `127.0.0.1:${identity}`,
        BUDGETS_ADDR: `127.0.0.1:${budgets}`,
        VIOLATIONS_ADDR: `127.0.0.1:${violations}`,
        COSTS_ADDR: `127.0.0.1:${costs}`,
        SCANNER_ADDR: `127.0.0.1:${scanner}`,
        NOTIFIER_ADDR: `127.0.0.1:${notifier}`,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
      };
      for (const name of ['DATABASE_URL', 'NATS_URL', 'REDIS_URL', 'GUARD_BOOTSTRAP_API_KEY'])
        delete env[name];
      child = spawn(process.execPath, ['--import', 'tsx', 'services/embedded/src/main.ts'], {
        cwd: repoRoot,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const deadline = Date.now() + 200_000;
      while (!stderr.includes('Cost governance API listening')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${stdout}\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await fetch(`http://127.0.0.1:${port}/v1/openapi.json`);
      child.kill('SIGTERM');
      await new Promise((resolve) => child!.once('exit', resolve));

      const lines = stdout.split('\n').filter((line) => line !== '');
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
      expect(stderr).toMatch(/Created team 'default' \(.+\) with a new API key/);
      expect(stderr).toMatch(/OpenAPI document: http:\/\/127\.0\.0\.1:\d+\/v1\/openapi\.json/);
      expect(stdout).not.toMatch(/cg_live_/);
    },
  );
});
