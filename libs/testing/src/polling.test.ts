import { describe, expect, it } from 'vitest';
import { eventually } from './polling';

describe('eventually', () => {
  it('returns the first value other than undefined', async () => {
    let calls = 0;
    expect(await eventually(() => (++calls === 3 ? 'ready' : undefined))).toBe('ready');
    expect(calls).toBe(3);
  });

  it('takes a throw as not yet, so an assertion can be the check', async () => {
    let calls = 0;
    await eventually(() => expect(++calls).toBe(3));
    expect(calls).toBe(3);
  });

  it('fails at the deadline with the last error the check threw', async () => {
    let calls = 0;
    const failure = await eventually(() => {
      throw new Error(`attempt ${++calls}`);
    }, 100).catch((error: unknown) => error);
    expect(calls).toBeGreaterThan(1);
    expect(failure).toEqual(new Error(`attempt ${calls}`));
  });

  it('fails at the deadline saying the condition was not met when the check never threw', async () => {
    await expect(eventually(() => undefined, 100)).rejects.toThrow('condition not met within 100 ms');
  });
});
