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
    { name: 'case differs', keys: [usage('Owner'), usage('owner', 2)], found: ['tag-key:owner'] },
    {
      name: 'separators differ',
      keys: [usage('cost_center'), usage('cost-center'), usage('CostCenter')],
      found: ['tag-key:costcenter'],
    },
    { name: 'unrelated keys', keys: [usage('team'), usage('application')], found: [] },
    {
      name: 'two groups',
      keys: [usage('env'), usage('Environment'), usage('app'), usage('application')],
      found: ['tag-key:environment', 'tag-key:application'],
    },
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
});
