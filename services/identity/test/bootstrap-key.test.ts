import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, repoRoot, startProcess, type Proc } from '@costgov/testing';
import { bootstrapKeyProblem } from '../src/bootstrap';

/** GUARD_BOOTSTRAP_API_KEY as the Kubernetes secret template ships it. */
function secretTemplateKey(): string {
  const text = readFileSync(path.join(repoRoot, 'deploy/k8s/secret.yaml'), 'utf8');
  const value = /^\s+GUARD_BOOTSTRAP_API_KEY:\s*(\S+)\s*$/m.exec(text)?.[1];
  if (!value) throw new Error('no GUARD_BOOTSTRAP_API_KEY in deploy/k8s/secret.yaml');
  return value;
}

describe('GUARD_BOOTSTRAP_API_KEY', () => {
  it.each([
    ['the Kubernetes secret template', secretTemplateKey()],
    ['the old compose default', 'cg_live_devonlyNotASecret0000000000000000'],
    ['a changeme value of the right shape', 'cg_live_changemechangemechangemechangeme'],
    ['a key too short for the format', 'cg_live_0123456789abcdefghij'],
    ['a key without the prefix', '0123456789abcdefghijklmnopqrstuvwxyzABCD'],
    ['a key with other characters', 'cg_live_0123456789abcdefghijklmnopqrstuv-'],
  ])('refuses %s', (_case, value) => {
    expect(bootstrapKeyProblem(value)).toMatch(/^GUARD_BOOTSTRAP_API_KEY /);
  });

  it('accepts a key of the real format', () => {
    expect(bootstrapKeyProblem('cg_live_4f9c2a7be01d5c88a3e6f1b2d4c7e9a0b3d5f7e1')).toBeUndefined();
  });

  const procs: Proc[] = [];
  afterAll(() => Promise.all(procs.map((proc) => proc.stop())));

  it(
    'set to the template placeholder stops identity at start with the reason and a non-zero exit',
    { timeout: 90_000 },
    async () => {
      const [grpcPort, metricsPort] = await Promise.all([freePort(), freePort()]);
      const proc = startProcess('identity', 'services/identity/src/main.ts', {
        GRPC_HOST: '127.0.0.1',
        GRPC_PORT: `${grpcPort}`,
        METRICS_PORT: `${metricsPort}`,
        DATA_DIR: 'memory',
        DATABASE_URL: '',
        NATS_URL: '',
        GUARD_BOOTSTRAP_API_KEY: secretTemplateKey(),
      });
      procs.push(proc);
      const code = await new Promise<number | null>((resolve) =>
        proc.child.exitCode !== null ? resolve(proc.child.exitCode) : proc.child.once('exit', resolve),
      );
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      expect(proc.output()).toContain(
        'GUARD_BOOTSTRAP_API_KEY is a placeholder from the deploy files, not a secret',
      );
    },
  );
});
