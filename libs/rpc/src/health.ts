import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, service as healthServiceDefinition } from 'grpc-health-check';

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

/**
 * Asks a server how one of its services (or, for '', the server) is doing: readiness probes and the
 * embedded start-up use it. A server that does not answer rejects with its ServiceError.
 */
export function checkHealth(address: string, service = '', timeoutMs = 1000): Promise<ServingStatus> {
  const client = new HealthClient(address, grpc.credentials.createInsecure());
  return new Promise<ServingStatus>((resolve, reject) => {
    const check = client.Check as (
      request: { service: string },
      options: grpc.CallOptions,
      callback: grpc.requestCallback<{ status: ServingStatus }>,
    ) => void;
    check.call(client, { service }, { deadline: Date.now() + timeoutMs }, (error, response) => {
      if (error || !response) reject(error ?? new Error('Empty health check response'));
      else resolve(response.status);
    });
  }).finally(() => client.close());
}
