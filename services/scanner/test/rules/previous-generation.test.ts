import { describe, expect, it } from 'vitest';
import { previousGeneration } from '../../src/rules/previous-generation';
import { context, data, resource } from './fixtures';

// 300 over the fixtures' 30 days is 304.4 a month.
const monthly = (300 / 30) * 30.44;
const cents = (amount: number) => Math.round(amount * 100) / 100;

describe('compute-previous-generation', () => {
  it.each([
    {
      name: 't2 instance, nothing newer in the data: typical 10% (estimate)',
      text: '$0.0464 per On Demand Linux t2.medium Instance Hour',
      share: 0.1,
    },
    {
      name: 'm4 instance: typical 4% (estimate)',
      text: '$2.00 per On Demand Linux m4.10xlarge Instance Hour',
      share: 0.04,
    },
    {
      name: 'g3 instance: successor not cheaper, no savings figure',
      text: '$1.14 per On Demand Linux g3.4xlarge Instance Hour',
      share: undefined,
    },
    {
      name: 'gp2 volume (gp3 is 20% less)',
      text: '$0.10 per GB-month of General Purpose SSD (gp2) provisioned storage',
      share: 0.2,
    },
    {
      name: 'magnetic volume (no saving estimated)',
      text: '$0.05 per GB-month of Magnetic provisioned storage',
      share: undefined,
    },
    { name: 't3 instance', text: '$0.0112 per On Demand Linux t3.micro Instance Hour', found: false },
    {
      name: 'gp3 volume',
      text: '$0.08 per GB-month of General Purpose SSD (gp3) provisioned storage',
      found: false,
    },
    { name: 'm5 instance', text: '$0.096 per On Demand Linux m5.large Instance Hour', found: false },
    { name: 'no description', text: '', found: false },
  ])('$name', ({ text, share, found = true }) => {
    const results = previousGeneration.evaluate(
      data({ resources: [resource({ chargeDescription: text, effectiveCost: 300, listCost: 300 })] }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
    if (!found) return;
    const savings = share === undefined ? undefined : cents(monthly * share);
    expect(results[0]!.estimatedMonthlySavings).toBe(savings);
    if (savings !== undefined) {
      expect(results[0]!.description).toContain('Estimate');
      expect(results[0]!.projectedFromDays).toBe(30);
    }
  });

  it.each([
    { name: 'same size', old: ['c4.large', 0.1], current: [['c5.large', 0.085]] },
    { name: 'other sizes, normalised', old: ['m4.xlarge', 0.2], current: [['m5.large', 0.096]] },
    {
      name: 'two current resources averaged, the closest generation only',
      old: ['r4.large', 0.133],
      current: [
        ['r5.large', 0.126],
        ['r5.2xlarge', 0.504],
        ['r6i.large', 0.02],
      ],
    },
  ] as { name: string; old: [string, number]; current: [string, number][] }[])(
    'observed unit prices: $name',
    ({ old, current }) => {
      const units = (type: string) => {
        const size = type.split('.')[1]!;
        return size === 'large' ? 4 : size === 'xlarge' ? 8 : Number(size.replace('xlarge', '')) * 8;
      };
      const hourly = (type: string, price: number, id: string) =>
        resource({
          resourceId: id,
          chargeDescription: `$${price} per On Demand Linux ${type} Instance Hour`,
          pricingQuantity: 720,
          effectiveCost: price * 720,
          listCost: price * 720,
        });
      const resources = [
        hourly(old[0], old[1], 'i-old'),
        ...current.map(([type, price], index) => hourly(type, price, `i-new-${index}`)),
      ];
      const results = previousGeneration.evaluate(data({ resources }), context());
      expect(results.map((r) => r.resourceId)).toEqual(['i-old']);
      const oldUnit = old[1] / units(old[0]);
      const closest = Math.min(...current.map(([type]) => Number(/\d/.exec(type)![0])));
      const peers = current.filter(([type]) => Number(/\d/.exec(type)![0]) === closest);
      const newUnit = peers.reduce((sum, [type, price]) => sum + price / units(type), 0) / peers.length;
      const share = 1 - newUnit / oldUnit;
      expect(results[0]!.estimatedMonthlySavings).toBeCloseTo(((old[1] * 720) / 30) * 30.44 * share, 1);
      expect(results[0]!.description).toContain(`costs ${Math.round(share * 100)}% less`);
      expect(results[0]!.description).not.toContain('Estimate');
    },
  );

  /** An instance of `type` over the fixtures' 30 days (720 hours) at `list` an hour, paying `rate` of it. */
  const instance = (id: string, type: string, list: number | null, effective: number, extra = {}) =>
    resource({
      resourceId: id,
      chargeDescription: `per On Demand Linux ${type} Instance Hour`,
      pricingQuantity: 720,
      effectiveCost: effective * 720,
      listCost: list === null ? null : list * 720,
      ...extra,
    });

  it('states the share its successor costs less, and the savings are that share of its cost', () => {
    const results = previousGeneration.evaluate(
      data({
        resources: [instance('i-old', 'c4.large', 0.1, 0.1), instance('i-new', 'c5.large', 0.085, 0.085)],
      }),
      context(),
    );
    const [old] = results;
    const share = 1 - 0.085 / 0.1;
    expect(old!.description).toContain(`its successor c5 costs ${Math.round(share * 100)}% less`);
    expect(old!.description).toContain('at list price');
    expect(old!.estimatedMonthlySavings).toBeCloseTo(0.1 * 24 * 30.44 * share, 2);
  });

  it('compares list with list, not the old list with a discounted effective price', () => {
    // The newer family is covered by a discount (effective 60% of list); the old is on demand.
    const results = previousGeneration.evaluate(
      data({
        resources: [instance('i-old', 'c4.large', 0.1, 0.1), instance('i-new', 'c5.large', 0.085, 0.051)],
      }),
      context(),
    );
    const share = 1 - 0.085 / 0.1;
    expect(results[0]!.estimatedMonthlySavings).toBeCloseTo(0.1 * 24 * 30.44 * share, 2);
  });

  it('compares effective with effective when the old resource has no list cost', () => {
    const results = previousGeneration.evaluate(
      data({
        resources: [instance('i-old', 'c4.large', null, 0.1), instance('i-new', 'c5.large', 0.085, 0.08)],
      }),
      context(),
    );
    const share = 1 - 0.08 / 0.1;
    expect(results[0]!.description).toContain('at effective price');
    expect(results[0]!.estimatedMonthlySavings).toBeCloseTo(0.1 * 24 * 30.44 * share, 2);
  });

  it('compares only within the same region; elsewhere it is the typical estimate', () => {
    const results = previousGeneration.evaluate(
      data({
        resources: [
          instance('i-old', 'c4.large', 0.1, 0.1),
          instance('i-new', 'c5.large', 0.05, 0.05, { regionId: 'eu-west-1' }),
        ],
      }),
      context(),
    );
    expect(results[0]!.description).toContain('Estimate: its successor typically costs 15% less');
    expect(results[0]!.estimatedMonthlySavings).toBeCloseTo(0.1 * 24 * 30.44 * 0.15, 2);
  });

  it('carries no savings for usage under a commitment its connection leaves partly unused, and says why', () => {
    const committed = { pricingCategory: 'Committed', commitmentDiscountStatus: 'Used' };
    const commitment = (unusedCost: number) => ({
      connectionId: 'con_a',
      commitmentDiscountId: 'sp-1',
      commitmentDiscountType: 'Compute Savings Plan',
      usedCost: 100,
      unusedCost,
      firstSeen: '2024-09-01T00:00:00.000Z',
      lastSeen: '2024-10-01T00:00:00.000Z',
    });
    const resources = [
      instance('i-old', 'c4.large', 0.1, 0.07, committed),
      instance('i-new', 'c5.large', 0.085, 0.0595, committed),
    ];
    const [partly] = previousGeneration.evaluate(
      data({ resources, commitments: [commitment(30)] }),
      context(),
    );
    expect(partly!.estimatedMonthlySavings).toBeUndefined();
    expect(partly!.description).toContain('frees commitment, not money');
    expect(partly!.recommendation).toContain('resized');
    // A commitment used in full: the move frees commitment for other usage, which is money.
    const [full] = previousGeneration.evaluate(data({ resources, commitments: [commitment(0)] }), context());
    expect(full!.estimatedMonthlySavings).toBeCloseTo(0.07 * 24 * 30.44 * (1 - 0.085 / 0.1), 2);
  });

  it('says so when the successor in the data costs no less, and promises nothing', () => {
    const results = previousGeneration.evaluate(
      data({
        resources: [instance('i-old', 'c4.large', 0.1, 0.1), instance('i-new', 'c5.large', 0.12, 0.12)],
      }),
      context(),
    );
    expect(results[0]!.estimatedMonthlySavings).toBeUndefined();
    expect(results[0]!.description).toContain('its successor c5 costs no less per hour');
  });
});
