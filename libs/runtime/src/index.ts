export * from './service';
export * from './standalone';
export * from './bus';
export * from './guards';
export * from './idempotency';
