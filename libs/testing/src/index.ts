// The test kit: what more than one package's tests need. A package's own helpers stay in its test/.
export * from './fresh';
export * from './polling';
export * from './loggers';
export * from './service';
export * from './system';
export * from './focus';
export * as focusSample from './focus-sample';
export * as focusScenario from './focus-scenario';
export * from './processes';
export * from './redis';
export * from './postgres';
export * from './nats';
export * from './server-process';
export * from './redis-cluster';
