import { expect } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient } from '@costgov/rpc';
import { freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../../src/system';

/** The whole system in this process for REST tests, with the keys most tests need besides the bootstrap one. */
export interface RestSystem {
  system: RunningSystem;
  teamId: string;
  /** guard:read and guard:write of another team: its view of our ids must be 404. */
  otherTeamKey: string;
  /** guard:read only, of the bootstrap team. */
  readOnlyKey: string;
  /** The bus's subject namespace (a fresh one per system), for consumers on NATS. */
  namespace: string;
}

/**
 * Starts every service on fresh schemas (real Postgres when DATABASE_URL is set) and a bus of its own.
 * `config` adds gateway settings (e.g. REDIS_URL), `env` the services' (e.g. OAuth).
 */
export async function startRestSystem(
  bootstrapKey: string,
  options: { config?: Record<string, string>; env?: NodeJS.ProcessEnv } = {},
): Promise<RestSystem> {
  const logger = createLogger('test', 'silent');
  const config = loadConfig(systemConfig, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: 'memory',
    ...options.config,
  });
  const bus = await testBus(logger);
  const system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: bootstrapKey, ...options.env },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus,
  });
  const teamId = system.bootstrap!.teamId;
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  const identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
  try {
    const other = await identityClient.createTeam({ name: 'other', plan: 'team' });
    const otherTeamKey = (
      await identityClient.createApiKey(
        { name: 'ci', scopes: ['guard:read', 'guard:write'] },
        { teamId: other.id },
      )
    ).secret;
    const readOnlyKey = (
      await identityClient.createApiKey({ name: 'dashboard', scopes: ['guard:read'] }, { teamId })
    ).secret;
    return { system, teamId, otherTeamKey, readOnlyKey, namespace: bus.namespace };
  } finally {
    identityClient.close();
  }
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface CallOptions {
  /** The credential; the bootstrap key when absent, none when null. */
  key?: string | null;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is (malformed JSON, other media types). */
  raw?: string;
  /** Content-Type of a body; application/json by default. */
  contentType?: string;
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

/** One REST call of a test: JSON in, the status, headers and parsed body out. */
export function restCaller(baseUrl: () => string, bootstrapKey: string) {
  return async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? bootstrapKey : options.key;
    if (key) headers.authorization = `Bearer ${key}`;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    if (body !== undefined) headers['content-type'] ??= options.contentType ?? 'application/json';
    const response = await fetch(`${baseUrl()}${path}`, { method, headers, body });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: text ? JSON.parse(text) : undefined,
    };
  };
}

/** An error answer in the Guard envelope, with its request id. */
export function expectError(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.body.error).toMatchObject({ code, message: expect.any(String), details: expect.any(Array) });
  expect(reply.headers.get('x-request-id')).toBeTruthy();
}
