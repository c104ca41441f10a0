import { describe, expect, it } from 'vitest';
import { missingRequiredTags } from '../../src/rules/missing-required-tags';
import { context, data, resource } from './fixtures';

describe('tags-missing-required', () => {
  it.each<{ name: string; required: string[]; tags: Record<string, string>; missing?: string }>([
    { name: 'no required keys: nothing', required: [], tags: {}, missing: undefined },
    {
      name: 'every key present',
      required: ['team', 'env'],
      tags: { team: 'a', env: 'prod' },
      missing: undefined,
    },
    { name: 'one key absent', required: ['team', 'env'], tags: { team: 'a' }, missing: 'env' },
    { name: 'a key present but blank', required: ['team'], tags: { team: '  ' }, missing: 'team' },
    { name: 'keys match whatever their case', required: ['team'], tags: { Team: 'a' }, missing: undefined },
    {
      name: 'a lower-case Google Cloud label satisfies a capitalised required key',
      required: ['Environment', 'Owner', 'CostCenter'],
      tags: { environment: 'prod', owner: 'ana', 'cost-center': '42' },
      missing: undefined,
    },
    {
      name: 'cost-center, cost_center, Cost Center and costcenter are one key',
      required: ['CostCenter'],
      tags: { 'Cost Center': '42' },
      missing: undefined,
    },
    {
      name: 'a separator-folded match with a blank value is still missing',
      required: ['CostCenter'],
      tags: { cost_center: ' ', team: 'a' },
      missing: 'CostCenter',
    },
    {
      name: 'two spellings of one required key are asked for once, as first written',
      required: ['CostCenter', 'cost-center', 'team'],
      tags: {},
      missing: 'CostCenter, team',
    },
    {
      name: 'other words are other keys',
      required: ['environment'],
      tags: { env: 'prod' },
      missing: 'environment',
    },
    { name: 'no tags at all', required: ['team', 'env'], tags: {}, missing: 'team, env' },
  ])('$name', ({ required, tags, missing }) => {
    const results = missingRequiredTags.evaluate(
      data({
        resources: [resource({ resourceId: 'vol-1', resourceType: 'volume', tags })],
      }),
      context({ requiredTags: required }),
    );
    if (missing === undefined) return expect(results).toEqual([]);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      ruleId: 'tags-missing-required',
      resourceId: 'vol-1',
      resourceType: 'volume',
      severity: 'medium',
      currency: 'USD',
    });
    expect(results[0]!.description).toContain(`has no ${missing} tag`);
  });

  it.each(['Tax', 'Credit', 'Purchase', 'Adjustment'])(
    'never flags a %s charge, which cannot carry tags, and flags its Usage neighbour',
    (chargeCategory) => {
      const results = missingRequiredTags.evaluate(
        data({
          resources: [
            resource({ resourceId: 'fee-1', chargeCategory }),
            resource({ resourceId: 'i-2', chargeCategory: 'Usage' }),
          ],
        }),
        context({ requiredTags: ['team'] }),
      );
      expect(results.map((r) => r.resourceId)).toEqual(['i-2']);
    },
  );

  it('reports each resource lacking a key, and the service when FOCUS gives no resource type', () => {
    const results = missingRequiredTags.evaluate(
      data({
        resources: [
          resource({ resourceId: 'a', tags: { team: 'x' } }),
          resource({ resourceId: 'b', resourceType: '', serviceName: 'Amazon S3' }),
          resource({ resourceId: 'c' }),
        ],
      }),
      context({ requiredTags: ['team'] }),
    );
    expect(results.map((r) => [r.resourceId, r.resourceType])).toEqual([
      ['b', 'Amazon S3'],
      ['c', 'instance'],
    ]);
  });
});
