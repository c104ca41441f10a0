import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@costgov/ids';
import { scanProject } from '../../src/rules/scan';
import { startCostsHolding, type CostsHolding } from '../costs-fixture';

/**
 * One month of a multi-cloud account through costs and the scan: AWS tags and Google Cloud labels (lower
 * case only) under the same required keys, and charges that cannot carry tags (a support fee without a
 * resource, tax, a credit, a reservation purchase, an adjustment). Every expectation is worked out here
 * from the lines written.
 */

type Category = 'Usage' | 'Tax' | 'Credit' | 'Purchase' | 'Adjustment';
interface Line {
  resource: string;
  cost: number;
  category: Category;
  tags: Record<string, string>;
}

const lines: Line[] = [
  {
    resource: 'i-aws-1',
    cost: 300,
    category: 'Usage',
    tags: { Environment: 'prod', Owner: 'ana', CostCenter: '1' },
  },
  {
    resource: 'vm-gcp-1',
    cost: 200,
    category: 'Usage',
    tags: { environment: 'prod', owner: 'bo', 'cost-center': '2' },
  },
  { resource: 'vm-gcp-2', cost: 100, category: 'Usage', tags: { environment: 'dev', owner: 'cy' } },
  { resource: 'i-untagged', cost: 80, category: 'Usage', tags: {} },
  { resource: '', cost: 200, category: 'Usage', tags: {} }, // a support fee
  { resource: '', cost: 70, category: 'Tax', tags: {} },
  { resource: '', cost: -25, category: 'Credit', tags: {} },
  { resource: 'ri-1', cost: 150, category: 'Purchase', tags: {} },
  { resource: 'adj-1', cost: 5, category: 'Adjustment', tags: {} },
];
const required = ['Environment', 'Owner', 'CostCenter'];

const csv = (): string => {
  const header =
    'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,Tags,ChargeCategory';
  const rows = lines.map((line) =>
    [
      line.cost,
      line.cost,
      'USD',
      '2024-09-01T00:00:00Z',
      '2024-10-01T00:00:00Z',
      '2024-09-10T00:00:00Z',
      '2024-09-10T01:00:00Z',
      'Compute',
      line.resource,
      Object.keys(line.tags).length ? `"${JSON.stringify(line.tags).replaceAll('"', '""')}"` : '',
      line.category,
    ].join(','),
  );
  return `${header}\n${rows.join('\n')}\n`;
};

// The test's own reading of the rules.
const sum = (list: Line[]) => list.reduce((total, line) => total + line.cost, 0);
const byNature = (line: Line) => line.category !== 'Usage';
const taggable = (line: Line) => !byNature(line) && line.resource !== '';
const key = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '');
const carries = (line: Line, wanted: string) =>
  Object.entries(line.tags).some(([k, v]) => key(k) === key(wanted) && v.trim() !== '');

const team = { teamId: newId('team') };
let costsService: CostsHolding;
let costData: CostsHolding['clients']['costData'];
let scanData: CostsHolding['clients']['scanData'];
let connectionId: string;

beforeAll(async () => {
  costsService = await startCostsHolding(team, 'multi-cloud', csv(), { provider: 'other' });
  ({ connectionId } = costsService);
  ({ costData, scanData } = costsService.clients);
}, 60_000);

afterAll(async () => {
  await costsService?.stop();
});

describe('tags as people write them, and spend that cannot carry tags, through costs', () => {
  it('finds the resources missing a required key, whatever the case and separators of the keys present', async () => {
    const outcome = await scanProject(
      { scanData },
      {
        teamId: team.teamId,
        projectId: newId('project'),
        connectionIds: [connectionId],
        requiredTags: required,
        now: new Date(),
      },
    );
    const missing = lines
      .filter((line) => taggable(line) && required.some((wanted) => !carries(line, wanted)))
      .map((line) => line.resource)
      .sort();
    expect(missing).toEqual(['i-untagged', 'vm-gcp-2']);
    expect(
      outcome.results
        .filter((result) => result.ruleId === 'tags-missing-required')
        .map((result) => result.resourceId)
        .sort(),
    ).toEqual(missing);
  });

  it('states the untagged and unattributed shares over the spend that could have them, and what was left out', async () => {
    const outcome = await scanProject(
      { scanData },
      {
        teamId: team.teamId,
        projectId: newId('project'),
        connectionIds: [connectionId],
        requiredTags: required,
        now: new Date(),
      },
    );
    const canCarry = lines.filter(taggable);
    const untagged = sum(canCarry.filter((line) => Object.keys(line.tags).length === 0));
    const noResource = sum(lines.filter((line) => !byNature(line) && line.resource === ''));
    const ofCategories = sum(lines.filter(byNature));
    const unallocatedShare = untagged / sum(canCarry);
    // Counted over all the spend, as before, the share would be far higher (and high, not medium).
    const naive = sum(lines.filter((line) => Object.keys(line.tags).length === 0)) / sum(lines);
    expect(naive).toBeGreaterThanOrEqual(0.3);
    expect(unallocatedShare).toBeGreaterThanOrEqual(0.1);
    expect(unallocatedShare).toBeLessThan(0.3);
    const unallocated = outcome.results.find((result) => result.ruleId === 'spend-unallocated-share');
    expect(unallocated).toMatchObject({ resourceId: connectionId, severity: 'medium' });
    expect(unallocated!.description).toBe(
      `${(unallocatedShare * 100).toFixed(1)}% of the connection's taggable spend (${untagged} of ${sum(canCarry)} USD) carries no tags. ` +
        `Left out as they cannot carry tags: ${noResource} USD of charges without a resource id and ${ofCategories} USD (net) of tax, credit, purchase and adjustment charges.`,
    );

    const counted = sum(lines) - ofCategories;
    const unattributedShare = noResource / counted;
    expect(unattributedShare).toBeGreaterThanOrEqual(0.2);
    const unattributed = outcome.results.find((result) => result.ruleId === 'spend-unattributed-share');
    expect(unattributed!.description).toBe(
      `${(unattributedShare * 100).toFixed(1)}% of the connection's spend (${noResource} of ${counted} USD) has no resource id. ` +
        `Left out: ${ofCategories} USD (net) of tax, credit, purchase and adjustment charges.`,
    );
  });

  it('measures tag coverage over the cost that can carry tags, and answers the rest apart', async () => {
    const coverage = await costData.getTagCoverage(
      {
        connectionIds: [connectionId],
        requiredTags: required,
        from: timestampFromDate(new Date('2024-09-01T00:00:00Z')),
        to: timestampFromDate(new Date('2024-10-01T00:00:00Z')),
      },
      team,
    );
    const canCarry = lines.filter(taggable);
    const covered = sum(canCarry.filter((line) => required.every((wanted) => carries(line, wanted))));
    expect(coverage.covered.map(({ currency, amount }) => ({ currency, amount }))).toEqual([
      { currency: 'USD', amount: covered },
    ]);
    expect(coverage.total[0]!.amount).toBe(sum(canCarry));
    expect(coverage.untaggable[0]!.amount).toBe(sum(lines.filter((line) => !taggable(line))));
    expect(coverage.ratio).toBeCloseTo(covered / sum(canCarry), 12);
  });
});
