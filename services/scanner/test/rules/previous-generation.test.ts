import { describe, expect, it } from 'vitest';
import { previousGeneration } from '../../src/rules/previous-generation';
import { context, data, resource } from './fixtures';

describe('compute-previous-generation', () => {
  it.each([
    { name: 't2 instance', text: '$0.0464 per On Demand Linux t2.medium Instance Hour', savings: 30.44 },
    { name: 'm4 instance', text: '$2.00 per On Demand Linux m4.10xlarge Instance Hour', savings: 30.44 },
    { name: 'g3 instance', text: '$1.14 per On Demand Linux g3.4xlarge Instance Hour', savings: 30.44 },
    {
      name: 'gp2 volume (gp3 is 20% less)',
      text: '$0.10 per GB-month of General Purpose SSD (gp2) provisioned storage',
      savings: 60.88,
    },
    {
      name: 'magnetic volume (no saving estimated)',
      text: '$0.05 per GB-month of Magnetic provisioned storage',
      savings: undefined,
    },
    { name: 't3 instance', text: '$0.0112 per On Demand Linux t3.micro Instance Hour', found: false },
    {
      name: 'gp3 volume',
      text: '$0.08 per GB-month of General Purpose SSD (gp3) provisioned storage',
      found: false,
    },
    { name: 'm5 instance', text: '$0.096 per On Demand Linux m5.large Instance Hour', found: false },
    { name: 'no description', text: '', found: false },
  ])('$name', ({ text, savings, found = true }) => {
    // 300 over 30 days is 304.4 a month.
    const results = previousGeneration.evaluate(
      data({ resources: [resource({ chargeDescription: text, effectiveCost: 300 })] }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
    if (found) expect(results[0]!.estimatedMonthlySavings).toBe(savings);
  });
});
