export { run, exitCodes, defaultIdentityAddress } from './program';
export type { Io, Writer } from './output';
