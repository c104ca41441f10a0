export * from './db';
export * from './migrate';
export * from './paging';
export * from './filters';
export * from './unavailable';
