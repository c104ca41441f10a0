import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installProcessGuards, type UncaughtKind } from '../src/guards';

interface LogLine {
  level: string;
  msg: string;
  kind?: string;
  err?: { type?: string; message: string; stack?: string };
}

const jsonLines = (output: string): LogLine[] =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);

describe('process guards', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
    child = undefined;
  });

  it('log and count what escaped, and the process goes on answering', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'guarded-process.ts')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const proc = child;
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no LISTENING line:\n${output}`)), 20_000);
      proc.stdout!.on('data', () => {
        const match = /LISTENING (\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      // Stack lines left out: the test runner would try to map them to source.
      proc.once('exit', (code) =>
        reject(new Error(`exited with ${code}:\n${output.replace(/^\s+at .*\n/gm, '')}`)),
      );
    });

    const counter = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(counter).toContain('process_uncaught_errors_total{kind="uncaught_exception"} 2');
    expect(counter).toContain('process_uncaught_errors_total{kind="unhandled_rejection"} 1');
    expect(proc.exitCode).toBeNull();

    const lines = jsonLines(output).filter((line) => line.kind);
    expect(lines).toHaveLength(3);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 'error',
          kind: 'uncaught_exception',
          err: expect.objectContaining({
            type: 'TypeError',
            message: 'thrown from a timer',
            stack: expect.stringContaining('guarded-process.ts'),
          }),
        }),
        expect.objectContaining({
          kind: 'unhandled_rejection',
          err: expect.objectContaining({ type: 'Error', message: 'rejected and never awaited' }),
        }),
        expect.objectContaining({ kind: 'uncaught_exception', err: { message: 'not an Error' } }),
      ]),
    );
  });

  it('removes its handlers when asked, and survives a logger that throws', () => {
    const fake = new EventEmitter();
    const counted: UncaughtKind[] = [];
    const remove = installProcessGuards(
      {
        error: () => {
          throw new Error('log stream closed');
        },
      },
      { count: (kind) => void counted.push(kind), process: fake as unknown as NodeJS.Process },
    );
    expect(() => fake.emit('uncaughtException', new Error('x'))).not.toThrow();
    expect(() => fake.emit('unhandledRejection', 'y')).not.toThrow();
    expect(counted).toEqual(['uncaught_exception', 'unhandled_rejection']);
    remove();
    expect(fake.listenerCount('uncaughtException') + fake.listenerCount('unhandledRejection')).toBe(0);
  });
});
