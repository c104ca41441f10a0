export { identityModule, printBootstrap, type IdentityOptions } from './module';
export type { BootstrapResult } from './bootstrap';
