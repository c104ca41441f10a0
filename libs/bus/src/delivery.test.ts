import { describe, expect, it } from 'vitest';
import { UnavailableError } from '@costgov/errors';
import { captureLogger } from '@costgov/testing';
import { maxBackoffMs, outageMaxDeliver, resolveConsumeOptions } from './bus';
import { toWire } from './cloudevent';
import { deliver } from './delivery';
import { RedeliverLater } from './redeliver';
import { testEvent } from '../test/support';

describe('deliver: a dependency outage', () => {
  const options = resolveConsumeOptions({
    durable: 'outage',
    types: ['budgets.>'],
    maxDeliver: 3,
    handler: async () => {
      throw new UnavailableError();
    },
  });
  const message = toWire(testEvent(), 'costgov');

  it('is redelivered past maxDeliver, with a warning', async () => {
    const { logger, lines } = captureLogger();
    const settlement = await deliver({
      message,
      deliveryCount: 50,
      options,
      logger,
      system: 'memory',
      consumer: 'costgov_test',
    });
    expect(settlement.kind).toBe('nak');
    expect(lines.map((line) => line.msg)).toContain('dependency unavailable; redelivering');
  });

  it('ends at the broker bound: terminated and logged at error, not dropped silently', async () => {
    const { logger, lines } = captureLogger();
    const settlement = await deliver({
      message,
      deliveryCount: outageMaxDeliver,
      options,
      logger,
      system: 'memory',
      consumer: 'costgov_test',
    });
    expect(settlement.kind).toBe('term');
    expect(lines.some((line) => line.level === 'error' && /message terminated/.test(line.msg))).toBe(true);
  });
});

describe('deliver: a handler that asks for redelivery (RedeliverLater)', () => {
  const message = toWire(testEvent(), 'costgov');
  const asking = (delayMs: number) =>
    resolveConsumeOptions({
      durable: 'later',
      types: ['budgets.>'],
      maxDeliver: 3,
      handler: async () => {
        throw new RedeliverLater(delayMs, 'costs is unavailable');
      },
    });

  it.for([
    { delayMs: 2_500, expected: 2_500 },
    { delayMs: 0, expected: 0 },
    { delayMs: -5, expected: 0 },
    { delayMs: Number.NaN, expected: 0 },
    { delayMs: 10 * maxBackoffMs, expected: maxBackoffMs },
  ])(
    'asked $delayMs ms: nak after $expected ms, past maxDeliver, logged at debug only',
    async ({ delayMs, expected }) => {
      const { logger, lines } = captureLogger();
      const settlement = await deliver({
        message,
        deliveryCount: 10,
        options: asking(delayMs),
        logger,
        system: 'memory',
        consumer: 'costgov_test',
      });
      expect(settlement).toEqual({ kind: 'nak', delayMs: expected });
      expect(lines.map((line) => [line.level, line.msg])).toEqual([
        ['debug', 'redelivery asked by the handler'],
      ]);
    },
  );

  it('ends at the broker bound like an outage: terminated and logged at error', async () => {
    const { logger, lines } = captureLogger();
    const settlement = await deliver({
      message,
      deliveryCount: outageMaxDeliver,
      options: asking(1_000),
      logger,
      system: 'memory',
      consumer: 'costgov_test',
    });
    expect(settlement.kind).toBe('term');
    expect(lines.some((line) => line.level === 'error' && /message terminated/.test(line.msg))).toBe(true);
  });
});
