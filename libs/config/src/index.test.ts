import { describe, expect, it } from 'vitest';
import { baseConfig, loadConfig } from './index';

describe('loadConfig', () => {
  it('applies defaults and freezes the result', () => {
    const config = loadConfig(baseConfig, {});
    expect(config.DATA_DIR).toBe('.data');
    expect(config.EVENT_NAMESPACE).toBe('costgov');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names the offending variable', () => {
    expect(() => loadConfig(baseConfig, { DATABASE_URL: 'not a url', RPC_DEADLINE_MS: '-1' })).toThrow(
      /DATABASE_URL[\s\S]*RPC_DEADLINE_MS/,
    );
  });
});
