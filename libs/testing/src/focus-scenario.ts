/**
 * A FOCUS 1.2 export written for the scenario tests (the scanner's scenario-scan and the REST one): one
 * AWS account from 1 August to 20 September 2024, one row per resource and day, as a mid-month export
 * is: its usage runs to 21 September while its tax and support rows span their whole month, to
 * 1 October (as AWS dates them). Planted waste and planted non-problems; `planted` holds the facts the
 * file was written from, so the test computes what a scan must find without reading the scanner's
 * output.
 */

const dayMs = 86_400_000;
export const first = Date.UTC(2024, 7, 1);
/** 51 days of usage: 1 August to 20 September (the data ends on 21 September). */
export const days = 51;

export const connectionServices = {
  ec2: ['Amazon Elastic Compute Cloud', 'Compute'],
  vpc: ['Amazon Virtual Private Cloud', 'Networking'],
  lambda: ['AWS Lambda', 'Compute'],
  s3: ['Amazon Simple Storage Service', 'Storage'],
  ebs: ['Amazon Elastic Block Store', 'Storage'],
  support: ['AWS Support (Business)', 'Management and Governance'],
  tax: ['Tax', ''],
} as const;

/** A few percent of deterministic jitter around 1. */
const jitter = (day: number, seed: number) => 1 + 0.03 * Math.sin(day * 2.39 + seed * 1.7);

const prod = { environment: 'production', application: 'storefront' };
const dev = { environment: 'dev', application: 'storefront' };

export const planted = {
  savingsPlan: {
    id: 'arn:aws:savingsplans::111122223333:savingsplan/sp-0a1b2c',
    /** Commitment per day: the covered instances use 70% of it (63.504), 30% is billed Unused. */
    perDay: 90.72,
  },
  /** Covered by the savings plan (status Used) at 70% of list. */
  covered: [
    { id: 'i-prod-m5-1', type: 'm5.4xlarge', hourly: 0.768 },
    { id: 'i-prod-m5-2', type: 'm5.4xlarge', hourly: 0.768 },
    { id: 'i-prod-m5-3', type: 'm5.4xlarge', hourly: 0.768 },
    { id: 'i-prod-c5-1', type: 'c5.2xlarge', hourly: 0.34 },
    { id: 'i-prod-c5-2', type: 'c5.2xlarge', hourly: 0.34 },
    /** Previous generation: the same class and size as c5.2xlarge, dearer per hour. */
    { id: 'i-prod-c4-1', type: 'c4.2xlarge', hourly: 0.398 },
    { id: 'i-prod-c4-2', type: 'c4.2xlarge', hourly: 0.398 },
  ],
  coveredRate: 0.7,
  /** Dev machines on demand, every hour. */
  alwaysOn: [
    { id: 'i-dev-build-1', type: 't3.xlarge', hourly: 0.1664 },
    { id: 'i-dev-build-2', type: 't3.xlarge', hourly: 0.1664 },
  ],
  /** A dev machine already scheduled: 12 hours on weekdays (not a problem). */
  scheduled: { id: 'i-dev-scheduled', type: 't3.xlarge', hourly: 0.1664 },
  /** Idle addresses at 0.005 an hour; the third allocated on 10 September. */
  idleAddresses: [
    { id: 'eipalloc-0001', from: 0 },
    { id: 'eipalloc-0002', from: 0 },
    { id: 'eipalloc-0003', from: 40 },
  ],
  idleHourly: 0.005,
  /** Lambda usage a day, and the one real anomaly: 2000 more on 17 September (day 47). */
  lambdaPerDay: 50,
  anomaly: { day: 47, extra: 2000 },
  s3PerDay: 30,
  /**
   * Non-problems: a monthly support fee and a tax row a month, each spanning its whole month from the
   * 1st (September's to 1 October, past the usage), a one-time purchase, a credit.
   */
  supportFee: 1000,
  purchase: { id: 'ri-upfront-0001', day: 45, cost: 3000 },
  tax: 450,
  credit: { day: 42, cost: -500 },
  /**
   * The team's required tag keys, written as the team writes them: the resources' lower-case
   * `environment` and `application` keys satisfy them (keys compare whatever their case and separators).
   */
  requiredTags: ['Environment', 'Application'],
  /** gp3 volumes (current generation) at 1.2 a day, each with a tagging problem or none. */
  volumePerDay: 1.2,
  volumes: {
    /** No tags at all: missing both required keys. */
    untagged: { id: 'vol-untagged', tags: {} as Record<string, string> },
    /** `Env` for `environment`: the required Environment key is missing, and one meaning has two keys. */
    misKeyed: { id: 'vol-env-key', tags: { Env: 'production', application: 'storefront' } },
    /** `prod` for `production`: one value spelled two ways. */
    misValued: { id: 'vol-prod-value', tags: { environment: 'prod', application: 'storefront' } },
    /** Capitalised keys, as AWS users write them: the same keys as `environment`, not a problem. */
    capitalised: { id: 'vol-capitalised', tags: { Environment: 'production', Application: 'storefront' } },
  },
};

const columns = [
  'BilledCost',
  'EffectiveCost',
  'ListCost',
  'BillingCurrency',
  'BillingAccountId',
  'BillingPeriodStart',
  'BillingPeriodEnd',
  'ChargePeriodStart',
  'ChargePeriodEnd',
  'ChargeCategory',
  'ChargeFrequency',
  'ChargeDescription',
  'ServiceName',
  'ServiceCategory',
  'ProviderName',
  'PublisherName',
  'InvoiceIssuerName',
  'RegionId',
  'SubAccountId',
  'ResourceId',
  'ResourceType',
  'PricingCategory',
  'PricingUnit',
  'PricingQuantity',
  'ConsumedUnit',
  'ConsumedQuantity',
  'CommitmentDiscountId',
  'CommitmentDiscountType',
  'CommitmentDiscountCategory',
  'CommitmentDiscountStatus',
  'Tags',
] as const;

type Row = Partial<Record<(typeof columns)[number], string | number>>;

const stamp = (at: number) => new Date(at).toISOString().replace('.000Z', 'Z');
const quote = (value: string | number | undefined) => {
  if (value === undefined || value === '') return '';
  const text = String(value);
  return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

/** A charge of day `day` (0 = 1 August) over `hours` hours from `fromHour`, in its billing period. */
function charge(day: number, cost: number, fields: Row, hours = 24, fromHour = 0): Row {
  const start = first + day * dayMs + fromHour * 3_600_000;
  const date = new Date(start);
  const periodStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  const periodEnd = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  return {
    BilledCost: cost,
    EffectiveCost: cost,
    BillingCurrency: 'USD',
    BillingAccountId: '111122223333',
    BillingPeriodStart: stamp(periodStart),
    BillingPeriodEnd: stamp(periodEnd),
    ChargePeriodStart: stamp(start),
    ChargePeriodEnd: stamp(start + hours * 3_600_000),
    ChargeCategory: 'Usage',
    ChargeFrequency: 'Usage-Based',
    ProviderName: 'AWS',
    PublisherName: 'AWS',
    InvoiceIssuerName: 'AWS',
    RegionId: 'us-east-1',
    SubAccountId: '111122223333',
    PricingCategory: 'Standard',
    ...fields,
  };
}

const service = (key: keyof typeof connectionServices): Row => ({
  ServiceName: connectionServices[key][0],
  ServiceCategory: connectionServices[key][1],
});
const tags = (value: Record<string, string>) => JSON.stringify(value);
const instance = (type: string, hourly: number) => ({
  ChargeDescription: `$${hourly} per On Demand Linux ${type} Instance Hour`,
  ResourceType: 'Instance',
  PricingUnit: 'Hours',
  ConsumedUnit: 'Hours',
  ...service('ec2'),
});
const isWeekday = (day: number) => ![0, 6].includes(new Date(first + day * dayMs).getUTCDay());

/** The scenario's rows, as objects. */
export function scenarioRows(): Row[] {
  const rows: Row[] = [];
  const p = planted;
  for (let day = 0; day < days; day++) {
    // Savings plan coverage: used by the covered instances, the rest of the day's commitment unused.
    let used = 0;
    for (const { id, type, hourly } of p.covered) {
      const list = hourly * 24;
      const effective = list * p.coveredRate;
      used += effective;
      rows.push({
        ...charge(day, effective, {
          ...instance(type, hourly),
          ResourceId: id,
          ListCost: list,
          PricingQuantity: 24,
          ConsumedQuantity: 24,
          PricingCategory: 'Committed',
          CommitmentDiscountId: p.savingsPlan.id,
          CommitmentDiscountType: 'Compute Savings Plan',
          CommitmentDiscountCategory: 'Spend',
          CommitmentDiscountStatus: 'Used',
          Tags: tags(prod),
        }),
        // Covered usage is billed through the plan's fee, not per row.
        BilledCost: 0,
      });
    }
    rows.push(
      charge(day, p.savingsPlan.perDay - used, {
        ...service('ec2'),
        ChargeDescription: 'Unused Compute Savings Plan commitment',
        ResourceId: p.savingsPlan.id,
        ResourceType: 'Savings Plan',
        PricingCategory: 'Committed',
        CommitmentDiscountId: p.savingsPlan.id,
        CommitmentDiscountType: 'Compute Savings Plan',
        CommitmentDiscountCategory: 'Spend',
        CommitmentDiscountStatus: 'Unused',
        Tags: tags({ environment: 'production', application: 'platform' }),
      }),
    );
    for (const { id, type, hourly } of p.alwaysOn)
      rows.push(
        charge(day, hourly * 24, {
          ...instance(type, hourly),
          ResourceId: id,
          ListCost: hourly * 24,
          PricingQuantity: 24,
          ConsumedQuantity: 24,
          Tags: tags(dev),
        }),
      );
    if (isWeekday(day))
      rows.push(
        charge(
          day,
          p.scheduled.hourly * 12,
          {
            ...instance(p.scheduled.type, p.scheduled.hourly),
            ResourceId: p.scheduled.id,
            ListCost: p.scheduled.hourly * 12,
            PricingQuantity: 12,
            ConsumedQuantity: 12,
            Tags: tags(dev),
          },
          12,
          8,
        ),
      );
    for (const { id, from } of p.idleAddresses)
      if (day >= from)
        rows.push(
          charge(day, p.idleHourly * 24, {
            ...service('vpc'),
            ChargeDescription: `$${p.idleHourly} per Idle public IPv4 address per hour`,
            ResourceId: id,
            ResourceType: 'IP Address',
            ListCost: p.idleHourly * 24,
            PricingUnit: 'Hrs',
            PricingQuantity: 24,
            Tags: tags(prod),
          }),
        );
    const lambda = p.lambdaPerDay * jitter(day, 1) + (day === p.anomaly.day ? p.anomaly.extra : 0);
    rows.push(
      charge(day, lambda, {
        ...service('lambda'),
        ChargeDescription: 'AWS Lambda - Total Compute (GB-Seconds)',
        ResourceId: 'arn:aws:lambda:us-east-1:111122223333:function:orders',
        ResourceType: 'Function',
        ListCost: lambda,
        PricingUnit: 'Lambda-GB-Second',
        PricingQuantity: Math.round(lambda / 0.0000166667),
        Tags: tags(prod),
      }),
    );
    const s3 = p.s3PerDay * jitter(day, 2);
    rows.push(
      charge(day, s3, {
        ...service('s3'),
        ChargeDescription: '$0.023 per GB - first 50 TB / month of storage used',
        ResourceId: 'orders-archive',
        ResourceType: 'Bucket',
        ListCost: s3,
        PricingUnit: 'GB-Mo',
        PricingQuantity: s3 / 0.023,
        Tags: tags(prod),
      }),
    );
    for (const { id, tags: volumeTags } of Object.values(p.volumes))
      rows.push(
        charge(day, p.volumePerDay, {
          ...service('ebs'),
          ChargeDescription: '$0.08 per GB-month of General Purpose SSD (gp3) provisioned storage',
          ResourceId: id,
          ResourceType: 'Volume',
          ListCost: p.volumePerDay,
          PricingUnit: 'GB-Mo',
          PricingQuantity: p.volumePerDay / 0.08,
          ...(Object.keys(volumeTags).length > 0 ? { Tags: tags(volumeTags) } : {}),
        }),
      );
    const date = new Date(first + day * dayMs);
    // The month's support fee and tax, booked on the 1st over the whole month, as AWS dates them.
    if (date.getUTCDate() === 1) {
      const hours = (Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) - date.getTime()) / 3_600_000;
      rows.push(
        charge(
          day,
          p.supportFee,
          {
            ...service('support'),
            ChargeFrequency: 'Recurring',
            ChargeDescription: 'Business support plan, monthly fee',
          },
          hours,
        ),
        charge(
          day,
          p.tax,
          {
            ...service('tax'),
            ChargeCategory: 'Tax',
            ChargeFrequency: 'Recurring',
            ChargeDescription: 'Sales tax',
          },
          hours,
        ),
      );
    }
    if (day === p.purchase.day)
      rows.push(
        charge(day, p.purchase.cost, {
          ...service('ec2'),
          ChargeCategory: 'Purchase',
          ChargeFrequency: 'One-Time',
          ChargeDescription: 'Reserved Instance, all upfront, 1 year',
          ResourceId: p.purchase.id,
          ResourceType: 'Reserved Instance',
        }),
      );
    if (day === p.credit.day)
      rows.push(
        charge(day, p.credit.cost, {
          ...service('ec2'),
          ChargeCategory: 'Credit',
          ChargeFrequency: 'One-Time',
          ChargeDescription: 'Promotional credit',
        }),
      );
  }
  return rows;
}

/** The scenario as a FOCUS CSV file. */
export function scenarioCsv(): string {
  const lines = scenarioRows().map((row) => columns.map((column) => quote(row[column])).join(','));
  return [columns.join(','), ...lines].join('\n') + '\n';
}
