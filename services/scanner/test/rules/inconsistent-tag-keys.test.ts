import { describe, expect, it } from 'vitest';
import { inconsistentTagKeys } from '../../src/rules/inconsistent-tag-keys';
import { context, data } from './fixtures';

const usage = (key: string, resources = 1) => ({ key, value: 'x', resources, effectiveCost: 1 });

describe('tags-inconsistent-keys', () => {
  it.each([
    { name: 'one spelling', keys: [usage('env', 3)], found: [] },
    {
      name: 'env and environment',
      keys: [usage('env', 3), usage('environment', 1)],
      found: ['tag-key:environment'],
    },
    {
      name: 'only case differs (AWS Owner, Google Cloud owner): one key',
      keys: [usage('Owner'), usage('owner', 2)],
      found: [],
    },
    {
      name: 'only separators differ: one key',
      keys: [usage('cost_center'), usage('cost-center'), usage('CostCenter'), usage('Cost Center')],
      found: [],
    },
    {
      name: 'a synonym beside case variants',
      keys: [usage('CostCenter'), usage('costcenter'), usage('cc')],
      found: ['tag-key:costcenter'],
    },
    { name: 'unrelated keys', keys: [usage('team'), usage('application')], found: [] },
    {
      name: 'two groups',
      keys: [usage('env'), usage('Environment'), usage('app'), usage('application')],
      found: ['tag-key:environment', 'tag-key:application'],
    },
    { name: 'case variants of one key only', keys: [usage('env'), usage('Env'), usage('ENV')], found: [] },
  ])('$name', ({ keys, found }) => {
    const results = inconsistentTagKeys.evaluate(data({ tagUsage: keys }), context());
    expect(results.map((r) => r.resourceId)).toEqual(found);
    for (const result of results) expect(result).toMatchObject({ severity: 'low', resourceType: 'tag-key' });
  });

  it('recommends the spelling most resources use', () => {
    const [result] = inconsistentTagKeys.evaluate(
      data({ tagUsage: [usage('env', 2), usage('environment', 5), usage('env', 1)] }),
      context(),
    );
    expect(result!.recommendation).toBe("Use 'environment' everywhere and retag what uses 'env'.");
    expect(result!.description).toContain("'environment' (5 resources), 'env' (3 resources)");
  });

  it('lists the case variants of a key together, with their resources summed', () => {
    const [result] = inconsistentTagKeys.evaluate(
      data({ tagUsage: [usage('Environment', 4), usage('environment', 3), usage('env', 2)] }),
      context(),
    );
    expect(result!.description).toBe(
      `The environment tag is written as 'Environment'/'environment' (${4 + 3} resources), 'env' (2 resources).`,
    );
    expect(result!.recommendation).toBe("Use 'Environment' everywhere and retag what uses 'env'.");
  });
});
