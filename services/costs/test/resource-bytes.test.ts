import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { resourceBytes } from '../src/scan-data/scan-data';

type Resource = Parameters<typeof resourceBytes>[0];

const base: Resource = {
  connectionId: 'con_01m8gk4p8kf6esb3jh42x9g0j7',
  resourceId: 'arn:aws:ec2:us-east-1:123456789012:instance/i-00000025e4a955345',
  resourceName: 'web-1',
  resourceType: 'Virtual Machine',
  serviceName: 'Amazon Elastic Compute Cloud',
  serviceCategory: 'Compute',
  regionId: 'us-east-1',
  subAccountId: '123456789012',
  providerName: 'AWS',
  skuId: 'SKU123',
  chargeCategory: 'Usage',
  pricingUnit: 'Hours',
  consumedUnit: 'Hours',
  pricingQuantity: 744,
  consumedQuantity: 744,
  tags: { team: 'platform', environment: 'prod' },
  billedCost: 123.456789,
  effectiveCost: 120.5,
  listCost: 150.25,
  contractedCost: null,
  chargeDescription: 'm5.large in US East (N. Virginia)',
  chargeClass: '',
  pricingCategory: 'Standard',
  commitmentDiscountId: '',
  commitmentDiscountCategory: '',
  commitmentDiscountStatus: '',
  commitmentDiscountType: '',
  capacityReservationId: '',
  capacityReservationStatus: '',
  unusedCommitmentCost: 0,
  unusedCapacityReservationCost: 0,
  extendedSupportCost: 0,
  daysSeen: 31,
  hoursSeen: 744,
  firstSeen: new Date('2026-11-01T00:00:00Z'),
  lastSeen: new Date('2026-11-30T23:59:59.999Z'),
};

/** The resource as the page carries it: its protobuf bytes, with its own field tag and length. */
function encoded(resource: Resource): number {
  const { firstSeen, lastSeen, listCost, contractedCost, ...rest } = resource;
  const message = create(costs.ScanResourceSchema, {
    ...rest,
    ...(listCost === null ? {} : { listCost }),
    ...(contractedCost === null ? {} : { contractedCost }),
    firstSeen: firstSeen ? timestampFromDate(firstSeen) : undefined,
    lastSeen: lastSeen ? timestampFromDate(lastSeen) : undefined,
  });
  const page = create(costs.GetScanDataResponseSchema, { resources: [message] });
  return toBinary(costs.GetScanDataResponseSchema, page).length;
}

describe('resourceBytes, the page size estimate', () => {
  const cases: Array<[string, Resource]> = [
    ['a plain instance', base],
    [
      'every cost, every commitment field set',
      {
        ...base,
        contractedCost: 99.5,
        commitmentDiscountId: 'arn:aws:savingsplans::123456789012:savingsplan/sp-1',
        commitmentDiscountCategory: 'Spend',
        commitmentDiscountStatus: 'Used',
        commitmentDiscountType: 'Compute Savings Plan',
        capacityReservationId: 'cr-0123456789abcdef0',
        capacityReservationStatus: 'Used',
        unusedCommitmentCost: 1.5,
        unusedCapacityReservationCost: 2.5,
        extendedSupportCost: 3.5,
      },
    ],
    [
      'zeros and empty strings (left out by protobuf)',
      {
        ...base,
        resourceName: '',
        tags: {},
        billedCost: 0,
        effectiveCost: 0,
        listCost: null,
        pricingQuantity: 0,
        consumedQuantity: 0,
        daysSeen: 0,
        hoursSeen: 0,
      },
    ],
    [
      'multi-byte names and tags',
      {
        ...base,
        resourceName: 'サーバー-ü-é-🚀'.repeat(20),
        tags: { équipe: 'données', 部署: '東京'.repeat(50) },
      },
    ],
    [
      'a hundred tags',
      {
        ...base,
        tags: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`key-${i}`, `value-${i}`])),
      },
    ],
    ['one tag of 20,000 bytes (longer length prefixes)', { ...base, tags: { note: 'x'.repeat(20_000) } }],
    [
      'negative costs and huge quantities',
      {
        ...base,
        billedCost: -1e9,
        effectiveCost: -0.000001,
        pricingQuantity: 1e15,
        hoursSeen: 2_000_000_000,
      },
    ],
  ];

  it.each(cases)('never counts %s short, and stays within half again of it', (_, resource) => {
    const actual = encoded(resource);
    const estimate = resourceBytes(resource);
    expect(estimate).toBeGreaterThanOrEqual(actual);
    // Near the real size: not the JSON length, which counted every field's name and cut pages at half.
    expect(estimate).toBeLessThanOrEqual(actual * 1.5 + 200);
  });
});
