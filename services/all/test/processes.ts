import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const repoRoot = path.resolve(__dirname, '../../..');

export interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** Starts `services/<name>/src/main.ts` (or any entry) as its own Node process, the way `npm run start:<name>` does. */
export function startProcess(name: string, entry: string, env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    name,
    child,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

export async function waitForReady(url: string, procs: Proc[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const proc of procs) {
      if (proc.child.exitCode !== null)
        throw new Error(`${proc.name} exited (${proc.child.exitCode}):\n${proc.output()}`);
    }
    try {
      const response = await fetch(`${url}/readyz`);
      const body = (await response.json()) as { backends: Record<string, boolean> };
      if (response.ok && Object.values(body.backends).every(Boolean)) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(
    `not ready within ${timeoutMs} ms:\n${procs.map((p) => `--- ${p.name}\n${p.output()}`).join('\n')}`,
  );
}

/** A redis-server of the test's own, so it can be stopped and started without disturbing anyone else. */
export function startRedis(port: number): Proc {
  const proc = startProcessRaw('redis', 'redis-server', [
    '--port',
    `${port}`,
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  return proc;
}

function startProcessRaw(name: string, command: string, args: string[]): Proc {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    name,
    child,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
