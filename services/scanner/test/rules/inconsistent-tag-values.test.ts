import { describe, expect, it } from 'vitest';
import { inconsistentTagValues } from '../../src/rules/inconsistent-tag-values';
import { context, data } from './fixtures';

const usage = (key: string, value: string, resources = 1) => ({ key, value, resources, effectiveCost: 1 });

describe('tags-inconsistent-values', () => {
  it.each([
    { name: 'one spelling', values: [usage('env', 'prod'), usage('env', 'dev')], found: [] },
    {
      name: 'prod and production',
      values: [usage('env', 'prod', 4), usage('env', 'production')],
      found: ['tag-value:env=production'],
    },
    {
      name: 'case differs',
      values: [usage('env', 'Prod'), usage('env', 'prod')],
      found: ['tag-value:env=production'],
    },
    {
      name: 'dev and development',
      values: [usage('stage', 'dev'), usage('stage', 'Development')],
      found: ['tag-value:stage=development'],
    },
    {
      name: 'same value under different keys is not a conflict',
      values: [usage('env', 'prod'), usage('tier', 'production')],
      found: [],
    },
    {
      name: 'free text values differ only in case',
      values: [usage('team', 'Payments'), usage('team', 'payments')],
      found: ['tag-value:team=payments'],
    },
    {
      name: 'keys differing only by case are one key',
      values: [usage('Environment', 'prod'), usage('environment', 'Production')],
      found: ['tag-value:environment=production'],
    },
    {
      name: 'one spelling under case variants of the key is no conflict',
      values: [usage('Environment', 'prod'), usage('environment', 'prod')],
      found: [],
    },
    { name: 'empty values are ignored', values: [usage('team', ''), usage('team', ' ')], found: [] },
  ])('$name', ({ values, found }) => {
    const results = inconsistentTagValues.evaluate(data({ tagUsage: values }), context());
    expect(results.map((r) => r.resourceId)).toEqual(found);
  });

  it('names every spelling and the one to keep', () => {
    const [result] = inconsistentTagValues.evaluate(
      data({ tagUsage: [usage('env', 'prd', 1), usage('env', 'production', 7), usage('env', 'prod', 2)] }),
      context(),
    );
    expect(result!.description).toBe(
      "Tag 'env' carries 'production' (7 resources), 'prod' (2 resources), 'prd' (1 resource) for one meaning.",
    );
    expect(result!.recommendation).toBe("Use 'env=production' everywhere.");
  });
});
