import { run } from './program';

// Sets the exit code rather than calling process.exit, so buffered output to a pipe is written in full.
void run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }).then(
  (code) => {
    process.exitCode = code;
  },
);
