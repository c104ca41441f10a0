export { identityModule, printBootstrap, type IdentityOptions } from './module';
export { identityConfig, type IdentityConfig } from './config';
export type { BootstrapResult } from './bootstrap';
// The SCIM filter translation, for the benchmark's query plans of the service's own SQL.
export { filterToSql, parseFilter, userFilterAttributes } from './scim/filter';
