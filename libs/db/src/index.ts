export * from './db';
export * from './migrate';
