import { describe, expect, it } from 'vitest';
import { UnavailableError } from '@costgov/errors';
import { outageMaxDeliver, resolveConsumeOptions } from './bus';
import { toWire } from './cloudevent';
import { deliver } from './delivery';
import { captureLogger, testEvent } from './test-support';

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
    const settlement = await deliver({ message, deliveryCount: 50, options, logger, system: 'memory' });
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
    });
    expect(settlement.kind).toBe('term');
    expect(lines.some((line) => line.level === 'error' && /message terminated/.test(line.msg))).toBe(true);
  });
});
