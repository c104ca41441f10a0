import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration';

describe('parseDuration', () => {
  it.each([
    ['90m', 90 * 60_000],
    ['12h', 12 * 3_600_000],
    ['30d', 30 * 86_400_000],
    [' 1d ', 86_400_000],
  ])('reads %j', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '30', 'd', '0d', '-1d', '1.5h', '30 d', '2w', '1d12h', '30s', '0', '99999999999999999d'])(
    'refuses %j',
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );

  describe('with other units and zero allowed (--retry-for)', () => {
    const rules = { units: ['s', 'm', 'h'], zero: true } as const;

    it.each([
      ['0', 0],
      ['0s', 0],
      ['0m', 0],
      ['30s', 30_000],
      ['2m', 120_000],
      ['1h', 3_600_000],
    ])('reads %j', (text, ms) => {
      expect(parseDuration(text, rules)).toBe(ms);
    });

    it.each(['', '30', '1d', '-1s', '1.5m', 's'])('refuses %j', (text) => {
      expect(parseDuration(text, rules)).toBeUndefined();
    });
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0'],
    [1000, '1s'],
    [90_000, '90s'],
    [120_000, '2m'],
    [3_600_000, '1h'],
    [86_400_000, '1d'],
    [1500, '1.5s'],
  ])('writes %j ms as %j', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    if (!text.includes('.'))
      expect(parseDuration(text, { units: ['s', 'm', 'h', 'd'], zero: true })).toBe(ms);
  });
});
