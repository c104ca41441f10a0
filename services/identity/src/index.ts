export { identityModule, printBootstrap, type IdentityOptions } from './module';
export { identityConfig, type IdentityConfig } from './config';
export type { BootstrapResult } from './bootstrap';
