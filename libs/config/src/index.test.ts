import { describe, expect, it } from 'vitest';
import { allOf, baseConfig, loadConfig, variablesOf, z } from './index';

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

describe('allOf', () => {
  const shared = z.object({ A: z.coerce.number().int().default(1) });
  const own = z
    .object({
      B: z.coerce.number().int().default(2),
      LIST: z
        .string()
        .default('')
        .transform((v) => v.split(',')),
    })
    .refine((c) => c.B < 100, { path: ['B'], message: 'must be below 100' });

  it('reads every schema from one environment', () => {
    expect(loadConfig(allOf(shared, own), { A: '5', LIST: 'x,y' })).toEqual({ A: 5, B: 2, LIST: ['x', 'y'] });
  });

  it('names the bad variables of all of them at once', () => {
    expect(() => loadConfig(allOf(shared, own), { A: 'one', B: 'two' })).toThrow(/A: .*\n {2}B: /);
  });

  it('keeps their refinements', () => {
    expect(() => loadConfig(allOf(shared, own), { B: '200' })).toThrow('B: must be below 100');
  });
});

describe('variablesOf', () => {
  it('lists the variables of objects, refined objects and their combinations', () => {
    const own = z.object({ B: z.string() }).refine(() => true);
    expect(variablesOf(allOf(baseConfig.pick({ DATA_DIR: true }), own)).sort()).toEqual(['B', 'DATA_DIR']);
  });
});

describe('a message that names its variable', () => {
  it('is not prefixed with the name again', () => {
    const schema = z.object({
      KEY: z.string().refine((v) => v !== 'placeholder', { message: 'KEY is a placeholder' }),
    });
    expect(() => loadConfig(schema, { KEY: 'placeholder' })).toThrow(/\n {2}KEY is a placeholder$/);
  });
});
