export * from './service';
export * from './standalone';
export * from './bus';
