import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, service as healthServiceDefinition } from 'grpc-health-check';
import { channelOptions } from './client';

/** What a health check answers: the grpc.health.v1 statuses, SERVICE_UNKNOWN for Watch only. */
export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

/** The standard grpc.health.v1.Health service on `server`; '' is the whole server, by convention. */
export function addHealthService(server: grpc.Server): HealthImplementation {
  const health = new HealthImplementation({ '': 'SERVING' });
  health.addToServer(server);
  return health;
}

const HealthClient = grpc.makeGenericClientConstructor(
  healthServiceDefinition as grpc.ServiceDefinition,
  'grpc.health.v1.Health',
);

/** Health checks of one server over one channel, for callers that ask again and again. */
export interface HealthChecker {
  /** How `service` ('' for the server) is doing; a server that does not answer rejects with its ServiceError. */
  check(service?: string, timeoutMs?: number): Promise<ServingStatus>;
  close(): void;
}

/**
 * A health client of `address` kept open: a readiness report polled every few seconds reuses one
 * connection instead of dialling each backend anew. Its channel redials a backend that went away as the
 * RPC clients' channels do (every ~100 ms), so the first check after it is back gets through.
 */
export function createHealthChecker(address: string): HealthChecker {
  const client = new HealthClient(address, grpc.credentials.createInsecure(), channelOptions);
  const check = client.Check as (
    request: { service: string },
    options: grpc.CallOptions,
    callback: grpc.requestCallback<{ status: ServingStatus }>,
  ) => void;
  return {
    check: (service = '', timeoutMs = 1000) =>
      new Promise<ServingStatus>((resolve, reject) => {
        check.call(client, { service }, { deadline: Date.now() + timeoutMs }, (error, response) => {
          if (error || !response) reject(error ?? new Error('Empty health check response'));
          else resolve(response.status);
        });
      }),
    close: () => client.close(),
  };
}

/**
 * Asks a server once how one of its services (or, for '', the server) is doing: the embedded start-up
 * uses it. A server that does not answer rejects with its ServiceError.
 */
export function checkHealth(address: string, service = '', timeoutMs = 1000): Promise<ServingStatus> {
  const checker = createHealthChecker(address);
  return checker.check(service, timeoutMs).finally(() => checker.close());
}
