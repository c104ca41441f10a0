/**
 * A FOCUS 1.2 export written for the scenario tests (the scanner's scenario-scan and the REST one): two months (August and September 2024) of one AWS
 * account, one row per resource and day, with planted waste and planted non-problems. `planted` holds
 * the facts the file was written from, so the test computes what a scan must find without reading the
 * scanner's output.
 */

const dayMs = 86_400_000;
export const first = Date.UTC(2024, 7, 1);
/** 61 days: 1 August to 30 September. */
export const days = 61;

export const connectionServices = {
  ec2: ['Amazon Elastic Compute Cloud', 'Compute'],
  vpc: ['Amazon Virtual Private Cloud', 'Networking'],
  lambda: ['AWS Lambda', 'Compute'],
  s3: ['Amazon Simple Storage Service', 'Storage'],
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
  /** Lambda usage a day, and the one real anomaly: 2000 more on 27 September (day 57). */
  lambdaPerDay: 50,
  anomaly: { day: 57, extra: 2000 },
  s3PerDay: 30,
  /** Non-problems: a monthly support fee on the 1st, a one-time purchase, a tax row a month, a credit. */
  supportFee: 1000,
  purchase: { id: 'ri-upfront-0001', day: 50, cost: 3000 },
  tax: 450,
  credit: { day: 42, cost: -500 },
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
    const date = new Date(first + day * dayMs);
    // A monthly support fee booked on the 1st, and the month's tax on its last day.
    if (date.getUTCDate() === 1)
      rows.push(
        charge(day, p.supportFee, {
          ...service('support'),
          ChargeFrequency: 'Recurring',
          ChargeDescription: 'Business support plan, monthly fee',
        }),
      );
    if (new Date(first + (day + 1) * dayMs).getUTCDate() === 1)
      rows.push(
        charge(day, p.tax, {
          ...service('tax'),
          ChargeCategory: 'Tax',
          ChargeFrequency: 'Recurring',
          ChargeDescription: 'Sales tax',
        }),
      );
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
