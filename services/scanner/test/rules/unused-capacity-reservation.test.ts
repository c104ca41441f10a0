import { describe, expect, it } from 'vitest';
import { unusedCapacityReservation } from '../../src/rules/unused-capacity-reservation';
import { context, data, resource } from './fixtures';

describe('commitments-unused-capacity-reservation', () => {
  it.each([
    {
      name: 'unused reservation',
      overrides: {
        capacityReservationId: 'cr-1',
        capacityReservationStatus: 'Unused',
        unusedCapacityReservationCost: 60,
      },
      savings: 60.88,
    },
    {
      name: 'partly unused',
      overrides: {
        capacityReservationId: 'cr-1',
        capacityReservationStatus: 'Used',
        unusedCapacityReservationCost: 15,
      },
      savings: 15.22,
    },
    {
      name: 'used reservation',
      overrides: { capacityReservationId: 'cr-1', capacityReservationStatus: 'Used' },
      found: false,
    },
    { name: 'no reservation (FOCUS 1.0)', overrides: {}, found: false },
  ])('$name', ({ overrides, savings, found = true }) => {
    const results = unusedCapacityReservation.evaluate(data({ resources: [resource(overrides)] }), context());
    expect(results).toHaveLength(found ? 1 : 0);
    if (found) expect(results[0]!.estimatedMonthlySavings).toBe(savings);
  });
});
