import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { closeRedisClient, createRedisClient, redactedRedisUrl } from './client';

const logger = { debug: () => undefined };

describe('createRedisClient', () => {
  it('makes a cluster client seeded by the URL, its credentials and TLS on every node', async () => {
    const client = createRedisClient({
      url: 'rediss://costgov:p%40ss@127.0.0.1:1/0',
      cluster: true,
      timeoutMs: 40,
      logger,
      purpose: 'test',
    });
    try {
      expect(client).toBeInstanceOf(Cluster);
      const cluster = client as Cluster;
      // Private in the typings; the seed is what the client is built from.
      expect((cluster as unknown as { startupNodes: unknown }).startupNodes).toEqual([
        { host: '127.0.0.1', port: 1 },
      ]);
      expect(cluster.options.enableOfflineQueue).toBe(false);
      expect(cluster.options.redisOptions).toMatchObject({
        username: 'costgov',
        password: 'p@ss',
        tls: {},
        commandTimeout: 40,
        maxRetriesPerRequest: 0,
      });
    } finally {
      await closeRedisClient(client);
    }
  });

  it('makes a single-server client that fails a command at once rather than queue it', async () => {
    const client = createRedisClient({ url: 'redis://127.0.0.1:1', timeoutMs: 40, logger, purpose: 'test' });
    try {
      expect(client).toBeInstanceOf(Redis);
      await expect(client.get('k')).rejects.toThrow(/enableOfflineQueue/);
    } finally {
      await closeRedisClient(client);
    }
  });

  it('names the server without its password', () => {
    expect(redactedRedisUrl('redis://:secret@redis.internal:6379')).toBe('redis://:***@redis.internal:6379');
    expect(redactedRedisUrl('not a url')).toBe('the configured URL');
  });
});
