import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@costgov/config';
import { scannerConfig } from '../src/config';

describe('scanner configuration', () => {
  it('defaults to both sides in one process, two-minute staleness', () => {
    expect(loadConfig(scannerConfig, {})).toMatchObject({
      SCANNER_MODE: 'all',
      SCAN_STALE_MS: 120_000,
      SCAN_RETRY_DEADLINE_MS: 90_000,
      SCAN_HEARTBEAT_MS: 5_000,
      SCAN_ACK_WAIT_MS: 30_000,
      SCAN_EXTRA_DELAY_MS: 0,
      SCAN_SHARD_RESOURCES: 10_000,
      SCAN_MAX_SHARDS: 64,
    });
  });

  it.each([
    [{ SCANNER_MODE: 'both' }, 'SCANNER_MODE'],
    [{ SCAN_HEARTBEAT_MS: '40000' }, 'SCAN_HEARTBEAT_MS: must be shorter than SCAN_ACK_WAIT_MS'],
    [{ SCAN_STALE_MS: '10000' }, 'SCAN_HEARTBEAT_MS: must be under a third of SCAN_STALE_MS'],
    [{ SCAN_SHARD_RESOURCES: '0' }, 'SCAN_SHARD_RESOURCES'],
    [{ SCAN_MAX_SHARDS: '0' }, 'SCAN_MAX_SHARDS'],
    [{ SCAN_MAX_SHARDS: '2000' }, 'SCAN_MAX_SHARDS'],
  ])('refuses %o', (env, message) => {
    expect(() => loadConfig(scannerConfig, env)).toThrow(ConfigError);
    expect(() => loadConfig(scannerConfig, env)).toThrow(message);
  });
});
