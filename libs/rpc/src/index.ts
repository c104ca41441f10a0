export { createRpcServer, type RpcServer, type RpcServerDeps, type ServiceImpl } from './server';
export { createRpcClient, type RpcClient, type RpcClientOptions } from './client';
export { errorDomain, grpcStatusOf, toDomainError, toGrpcStatus } from './errors';
export type { CallContext } from './context';
export { checkHealth, createHealthChecker, type HealthChecker, type ServingStatus } from './health';
export { messageWriter, type DomainShape } from './message-writer';
export { teamScoped, type TeamCallContext } from './team-scoped';
