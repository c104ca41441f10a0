import { run } from '../src';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export type Cli = (...argv: string[]) => Promise<CliResult>;

/** The CLI run in this process against `address` (as IDENTITY_ADDR), its output captured. */
export function cliAt(address: string): Cli {
  return async (...argv) => {
    const result = { stdout: '', stderr: '' };
    const code = await run(argv, {
      stdout: { write: (text: string) => (result.stdout += text) },
      stderr: { write: (text: string) => (result.stderr += text) },
      env: { IDENTITY_ADDR: address },
    });
    return { code, ...result };
  };
}

/** stdout of a successful run, parsed as JSON; a failed run fails the test with its stderr. */
export function jsonOf<T>(result: CliResult): T {
  if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A stack frame line, which the CLI must never print. */
export const stackFrame = /^\s+at /m;
