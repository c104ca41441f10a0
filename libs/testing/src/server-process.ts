import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';

/** Whether something accepts TCP connections on a loopback port. */
export const portAccepts = (port: number): Promise<boolean> =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The path of an executable on PATH (or in the sbin folders, which a non-root PATH may lack). */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin'];
  return dirs.map((dir) => path.join(dir, name)).find((file) => path.isAbsolute(file) && isExecutable(file));
}

/** Folders matching `/usr/lib/postgresql/<version>/bin`, newest version first. */
export function postgresBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  try {
    return readdirSync(root)
      .sort((a, b) => Number(b) - Number(a))
      .map((version) => path.join(root, version, 'bin'));
  } catch {
    return [];
  }
}

/** uid and gid of an OS user, or undefined when there is none. */
export function osUser(name: string): { uid: number; gid: number } | undefined {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return undefined;
  }
}

export interface SpawnedServer {
  child: ChildProcess;
  output: () => string;
}

/**
 * Spawns a server in a process group of its own, so that kill -9 reaches its children too (Postgres
 * backends), as when a container or machine dies.
 */
export function spawnServer(
  command: string,
  args: string[],
  options: { cwd?: string; uid?: number; gid?: number; env?: NodeJS.ProcessEnv } = {},
): SpawnedServer {
  const child = spawn(command, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000); // the tail is what explains a failure
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('error', (error) => keep(Buffer.from(`spawn error: ${error.message}\n`)));
  return { child, output: () => output };
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Sends `signal` to the server's whole process group and waits until the server has exited. */
export async function signalServer(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (!running(child) || child.pid === undefined) return;
  const exited = once(child, 'exit');
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
  await exited;
}

/** Kills the group if the test process exits first, so no server outlives its test. */
export function killOnExit(current: () => ChildProcess | undefined): () => void {
  const kill = () => {
    const child = current();
    if (child?.pid !== undefined && running(child)) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  process.once('exit', kill);
  return () => process.off('exit', kill);
}

/** Polls until `ready` resolves true; fails with the server's output when it exits or times out. */
export async function waitForServer(
  name: string,
  server: SpawnedServer,
  ready: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!running(server.child)) {
      throw new Error(
        `${name} exited (${server.child.exitCode ?? server.child.signalCode}):\n${server.output()}`,
      );
    }
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline)
      throw new Error(`${name} not ready within ${timeoutMs} ms:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
