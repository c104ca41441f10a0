import { Readable } from 'node:stream';
import { currentColumns, focusColumns, type FocusVersion } from './focus-columns';

/** A FOCUS export made up for tests, the benchmark and the README demo: deterministic for a seed. */
export interface GenerateOptions {
  rows: number;
  /** Billing period, YYYY-MM (UTC). */
  month: string;
  seed?: number;
  /**
   * 1.0 to 1.2 write every column the version defines; 1.3 writes those it has not deprecated (so
   * `ServiceProviderName` and `HostProviderName`, no `ProviderName` nor `PublisherName`), with
   * `ContractApplied` on every fifth compute row and split cost allocation (`Allocated*`) on every
   * seventh row.
   */
  version?: FocusVersion;
  /** Provider-specific columns after the FOCUS ones (e.g. `x_CostCenter`), filled with text. */
  extraColumns?: string[];
  currency?: string;
  /** `iso` writes timestamps as 2024-09-01T00:00:00Z, `plain` as 2024-09-01 00:00:00 (AWS style). */
  timestamps?: 'plain' | 'iso';
  /**
   * How many resources the rows spread over, as in a large tenant's account (see `estateOf`); unset, one
   * resource per hour of the month's rows (`rows / hours`, each with one row an hour).
   */
  resources?: number;
  /** Called with the rows written so far every 100,000 rows (progress of a long file). */
  progress?: (rows: number) => void;
}

interface Service {
  name: string;
  category: string;
  subcategory: string;
  resource: (n: number) => string;
  resourceType: string;
  unit: string;
  unitPrice: number;
  maxQuantity: number;
}

const services: Service[] = [
  {
    name: 'Amazon Elastic Compute Cloud',
    category: 'Compute',
    subcategory: 'Virtual Machines',
    resource: (n) => `arn:aws:ec2:us-east-1:123456789012:instance/i-${hex(n, 17)}`,
    resourceType: 'Instance',
    unit: 'Hours',
    unitPrice: 0.0832,
    maxQuantity: 1,
  },
  {
    name: 'Amazon Simple Storage Service',
    category: 'Storage',
    subcategory: 'Object Storage',
    resource: (n) => `arn:aws:s3:::bucket-${hex(n, 8)}`,
    resourceType: 'Bucket',
    unit: 'GB-Mo',
    unitPrice: 0.023,
    maxQuantity: 40,
  },
  {
    name: 'Amazon Relational Database Service',
    category: 'Databases',
    subcategory: 'Relational Databases',
    resource: (n) => `arn:aws:rds:us-east-1:123456789012:db:db-${hex(n, 10)}`,
    resourceType: 'DB Instance',
    unit: 'Hours',
    unitPrice: 0.171,
    maxQuantity: 1,
  },
  {
    name: 'AWS Lambda',
    category: 'Compute',
    subcategory: 'Serverless Compute',
    resource: (n) => `arn:aws:lambda:us-east-1:123456789012:function:fn-${hex(n, 6)}`,
    resourceType: 'Function',
    unit: 'Requests',
    unitPrice: 0.0000002,
    maxQuantity: 50_000,
  },
  {
    name: 'Elastic Load Balancing',
    category: 'Networking',
    subcategory: 'Load Balancing',
    resource: (n) => `arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/lb-${hex(n, 8)}`,
    resourceType: 'Load Balancer',
    unit: 'LCU-Hours',
    unitPrice: 0.008,
    maxQuantity: 3,
  },
  {
    name: 'Amazon CloudWatch',
    category: 'Management and Governance',
    subcategory: 'Observability',
    resource: (n) => `arn:aws:logs:us-east-1:123456789012:log-group:/app/${hex(n, 6)}`,
    resourceType: 'Log Group',
    unit: 'GB',
    unitPrice: 0.5,
    maxQuantity: 2,
  },
];

const applications = ['checkout', 'search', 'billing', 'catalog', 'auth', 'analytics'];
const environments = ['prod', 'staging', 'dev'];
const teams = ['payments', 'platform', 'growth', 'data'];
const regions = [
  ['us-east-1', 'US East (N. Virginia)'],
  ['eu-west-1', 'Europe (Ireland)'],
  ['ap-southeast-1', 'Asia Pacific (Singapore)'],
] as const;

const hex = (n: number, width: number) => (n * 2654435761).toString(16).padStart(width, '0').slice(-width);

/** mulberry32: small, fast, and the same sequence for a seed everywhere. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;

/** The file's lines, header first, each ending in a newline. */
export function* focusLines(options: GenerateOptions): Generator<string> {
  const { rows, month, seed = 1, version = '1.2', extraColumns = [], currency = 'USD' } = options;
  const match = /^(\d{4})-(\d{2})$/.exec(month);
  if (!match) throw new Error(`month must be YYYY-MM, not '${month}'`);
  const periodStart = Date.UTC(+match[1]!, +match[2]! - 1, 1);
  const periodEnd = Date.UTC(+match[1]!, +match[2]!, 1);
  const hours = (periodEnd - periodStart) / 3_600_000;
  const stamp =
    options.timestamps === 'iso'
      ? (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')
      : (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  const random = randomFrom(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const columns = [...(version === '1.3' ? currentColumns(version) : focusColumns[version]), ...extraColumns];
  yield `${columns.join(',')}\n`;
  if (options.resources !== undefined) {
    yield* estateLines(options, columns, { periodStart, periodEnd, hours, stamp });
    return;
  }

  // Like a real export: each resource has one row per hour, so a day of a resource is 24 rows.
  const resources = Array.from({ length: Math.max(1, Math.ceil(rows / hours)) }, (_, n) => ({
    service: pick(services),
    number: n,
    region: pick(regions),
    discount: random() < 0.3 ? 0.72 : 1, // about a third covered by a commitment discount
    tags:
      random() < 0.2
        ? 'NULL'
        : quote(
            JSON.stringify({
              application: pick(applications),
              environment: pick(environments),
              team: pick(teams),
            }),
          ),
  }));

  for (let i = 0; i < rows; i++) {
    const resource = resources[i % resources.length]!;
    const { service, discount, tags } = resource;
    const resourceNumber = resource.number;
    const [regionId, regionName] = resource.region;
    const hour = Math.floor(i / resources.length) % hours;
    const quantity = Math.max(0.001, random() * service.maxQuantity);
    const listCost = quantity * service.unitPrice;
    const values: Record<string, string> = {
      AvailabilityZone: `${regionId}a`,
      BilledCost: (listCost * discount).toFixed(10),
      BillingAccountId: '123456789012',
      BillingAccountName: 'Example Corp',
      BillingAccountType: 'Billing Account',
      BillingCurrency: currency,
      BillingPeriodEnd: stamp(periodEnd),
      BillingPeriodStart: stamp(periodStart),
      ChargeCategory: 'Usage',
      ChargeClass: 'NULL',
      ChargeDescription: quote(`${service.unit} of ${service.name} in ${regionName}`),
      ChargeFrequency: 'Usage-Based',
      ChargePeriodEnd: stamp(periodStart + (hour + 1) * 3_600_000),
      ChargePeriodStart: stamp(periodStart + hour * 3_600_000),
      ConsumedQuantity: quantity.toFixed(6),
      ConsumedUnit: service.unit,
      ContractedCost: listCost.toFixed(10),
      ContractedUnitPrice: String(service.unitPrice),
      EffectiveCost: (listCost * discount).toFixed(10),
      InvoiceIssuerName: quote('Amazon Web Services, Inc.'),
      ListCost: listCost.toFixed(10),
      ListUnitPrice: String(service.unitPrice),
      PricingCategory: 'Standard',
      PricingCurrency: currency,
      PricingCurrencyContractedUnitPrice: String(service.unitPrice),
      PricingCurrencyEffectiveCost: (listCost * discount).toFixed(10),
      PricingCurrencyListUnitPrice: String(service.unitPrice),
      PricingQuantity: quantity.toFixed(6),
      PricingUnit: service.unit,
      ProviderName: 'AWS',
      PublisherName: quote('Amazon Web Services, Inc.'),
      RegionId: regionId,
      RegionName: quote(regionName),
      ResourceId: service.resource(resourceNumber),
      ResourceName: `${service.resourceType.toLowerCase().replace(' ', '-')}-${resourceNumber}`,
      ResourceType: quote(service.resourceType),
      ServiceCategory: quote(service.category),
      ServiceName: quote(service.name),
      ServiceSubcategory: quote(service.subcategory),
      SkuId: `SKU${hex(services.indexOf(service), 6)}`,
      SkuPriceId: `SKU${hex(services.indexOf(service), 6)}.${regionId}`,
      SubAccountId: '210987654321',
      SubAccountName: 'workloads',
      SubAccountType: 'Account',
      Tags: tags,
      ServiceProviderName: 'AWS',
      HostProviderName: 'AWS',
      ...(version === '1.3' ? focus13Values(i, service, listCost * discount, quantity) : {}),
    };
    yield `${columns.map((column) => values[column] ?? (column.startsWith('x_') ? `${column}-${i % 7}` : 'NULL')).join(',')}\n`;
    if ((i + 1) % 100_000 === 0) options.progress?.(i + 1);
  }
}

/** The FOCUS 1.3 columns of row `i` that vary: contract commitments applied, split cost allocation. */
function focus13Values(i: number, service: Service, cost: number, quantity: number): Record<string, string> {
  const values: Record<string, string> = {};
  if (service.category === 'Compute' && i % 5 === 0) {
    values.ContractApplied = quote(
      JSON.stringify({
        Elements: [
          {
            ContractId: 'ctr-2025-enterprise',
            ContractCommitmentId: 'ctr-2025-enterprise-spend',
            ContractCommitmentAppliedCost: Number(cost.toFixed(10)),
          },
        ],
      }),
    );
  }
  if (i % 7 === 0) {
    const application = applications[i % applications.length]!;
    values.AllocatedMethodId = 'split-by-usage';
    values.AllocatedMethodDetails = quote(
      JSON.stringify({
        Elements: [
          { AllocatedRatio: 0.5, UsageQuantity: Number((quantity / 2).toFixed(6)), UsageUnit: service.unit },
        ],
      }),
    );
    values.AllocatedResourceId = `k8s://cluster-main/namespaces/${application}`;
    values.AllocatedResourceName = application;
    values.AllocatedTags = quote(JSON.stringify({ application, allocated: 'true' }));
  }
  return values;
}

/** The file as a byte stream, in chunks of many lines (what an upload body or a file write takes). */
export function focusCsv(options: GenerateOptions): Readable {
  function* batched(): Generator<Buffer> {
    let pending = '';
    for (const line of focusLines(options)) {
      pending += line;
      if (pending.length >= 64 * 1024) {
        yield Buffer.from(pending);
        pending = '';
      }
    }
    if (pending) yield Buffer.from(pending);
  }
  return Readable.from(batched(), { objectMode: false });
}

/** Instance types of the hourly services, with their us-east-1 Linux on-demand price per hour. */
const instanceTypes: Record<'current' | 'previous', ReadonlyArray<readonly [string, number]>> = {
  current: [
    ['m5.large', 0.096],
    ['c5.xlarge', 0.17],
    ['t3.medium', 0.0416],
    ['r5.large', 0.126],
    ['m6i.large', 0.096],
  ],
  previous: [
    ['m4.large', 0.1],
    ['t2.medium', 0.0464],
    ['c4.xlarge', 0.199],
    ['r4.large', 0.133],
  ],
};

/** Shares of the estate's resources by service (index into `services`): compute-heavy, as most are. */
const serviceShares = [0.4, 0.15, 0.1, 0.15, 0.1, 0.1];

/** What a large tenant's estate holds, in shares of its resources (see `estateOf`). */
export const estateShares = {
  /** Resources without a Tags value at all. */
  untagged: 0.15,
  /** Of the tagged, those without a `team` tag. */
  withoutTeam: 0.1,
  /** Of the instances (EC2, RDS), those of a previous generation. */
  previousGeneration: 0.15,
  /** Of the non-production instances, those running around the clock; the others run 30 to 70 %. */
  nonProductionAlwaysOn: 0.08,
} as const;

/** One resource of a generated estate: drawn from the seed and its number alone, never stored. */
export interface EstateResource {
  service: Service;
  region: (typeof regions)[number];
  discount: number;
  /** The Tags field as written (quoted JSON, or NULL). */
  tags: string;
  environment: string | undefined;
  /** EC2 and RDS: the instance type, its price per hour, and whether it is a previous generation. */
  instance: { type: string; price: number; previous: boolean } | undefined;
  /** Share of its hours an hourly resource runs (1 = around the clock). */
  running: number;
}

/** Tags fields by application, environment and team (team -1: without a team tag), built once. */
const tagFields = new Map<string, string>();
const tagsField = (application: string, environment: string, team: string | undefined) => {
  const key = `${application}/${environment}/${team ?? ''}`;
  let field = tagFields.get(key);
  if (field === undefined) {
    field = quote(JSON.stringify({ application, environment, ...(team === undefined ? {} : { team }) }));
    tagFields.set(key, field);
  }
  return field;
};

/**
 * Resource `n` of an estate generated with `seed`: its service (40 % EC2, then S3, Lambda, RDS, load
 * balancers, log groups), region, commitment discount (about 30 %), tags (`estateShares`), instance type
 * and how much of the time it runs. Each is drawn from a generator seeded with the seed and `n`, so a
 * file of any size holds only the row being written.
 */
export function estateOf(seed: number, n: number): EstateResource {
  const random = randomFrom(Math.imul(seed, 0x9e3779b1) ^ Math.imul(n + 1, 0x85ebca6b));
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  let draw = random();
  let index = 0;
  while (index < serviceShares.length - 1 && draw >= serviceShares[index]!) draw -= serviceShares[index++]!;
  const service = services[index]!;
  const region = pick(regions);
  const discount = random() < 0.3 ? 0.72 : 1;
  let tags = 'NULL';
  let environment: string | undefined;
  if (random() >= estateShares.untagged) {
    const application = pick(applications);
    environment = random() < 0.5 ? 'prod' : pick(['staging', 'dev']);
    const team = random() < estateShares.withoutTeam ? undefined : pick(teams);
    tags = tagsField(application, environment, team);
  }
  let instance: EstateResource['instance'];
  if (service.unit === 'Hours') {
    const previous = random() < estateShares.previousGeneration;
    const [type, price] = pick(previous ? instanceTypes.previous : instanceTypes.current);
    instance = { type: service.resourceType === 'DB Instance' ? `db.${type}` : type, price, previous };
  }
  const nonProduction = environment !== undefined && environment !== 'prod';
  const running = !nonProduction
    ? 1
    : random() < estateShares.nonProductionAlwaysOn
      ? 1
      : 0.3 + 0.4 * random();
  return { service, region, discount, tags, environment, instance, running };
}

/** The resources a file generated with these options holds: `resources`, or fewer when rows are fewer. */
export const estateResources = (options: Pick<GenerateOptions, 'rows' | 'resources'>): number =>
  Math.min(options.resources ?? 0, options.rows);

/**
 * The rows of an estate of `resources` resources: each resource has `rows / resources` rows (the first
 * ones one more when it does not divide), spread evenly over the month, so a resource's rows cover the
 * whole period as a daily or hourly export's do. Rows go time slot by time slot, each slot over every
 * resource, as providers write them. An hourly resource's quantity is the hours it ran in its row's
 * span; other services' a random quantity per hour of the span.
 */
function* estateLines(
  options: GenerateOptions,
  columns: readonly string[],
  period: { periodStart: number; periodEnd: number; hours: number; stamp: (ms: number) => string },
): Generator<string> {
  const { rows, seed = 1, version = '1.2', currency = 'USD' } = options;
  const resources = estateResources(options);
  if (!Number.isInteger(options.resources) || options.resources! < 1)
    throw new Error(`resources must be a positive whole number, not ${options.resources}`);
  const { periodStart, periodEnd, hours, stamp } = period;
  const slots = Math.ceil(rows / resources);
  const random = randomFrom(seed);
  const billingStart = stamp(periodStart);
  const billingEnd = stamp(periodEnd);
  for (let i = 0; i < rows; i++) {
    const number = i % resources;
    const slot = Math.floor(i / resources);
    const resource = estateOf(seed, number);
    const { service, discount, tags, instance } = resource;
    const [regionId, regionName] = resource.region;
    // Slot k of a resource covers hours [k * hours / slots, (k + 1) * hours / slots); more slots than
    // hours go round the hours again.
    const [from, to] =
      slots <= hours
        ? [Math.floor((slot * hours) / slots), Math.floor(((slot + 1) * hours) / slots)]
        : [slot % hours, (slot % hours) + 1];
    const span = to - from;
    const unitPrice = instance?.price ?? service.unitPrice;
    const quantity = instance
      ? span * resource.running
      : Math.max(0.001, random() * service.maxQuantity * span);
    const listCost = quantity * unitPrice;
    const cost = (listCost * discount).toFixed(10);
    const description = instance
      ? `$${unitPrice} per On Demand Linux ${instance.type} ${service.resourceType} Hour in ${regionName}`
      : `${service.unit} of ${service.name} in ${regionName}`;
    const sku = `SKU${hex(services.indexOf(service), 6)}`;
    const values: Record<string, string> = {
      AvailabilityZone: `${regionId}a`,
      BilledCost: cost,
      BillingAccountId: '123456789012',
      BillingAccountName: 'Example Corp',
      BillingAccountType: 'Billing Account',
      BillingCurrency: currency,
      BillingPeriodEnd: billingEnd,
      BillingPeriodStart: billingStart,
      ChargeCategory: 'Usage',
      ChargeClass: 'NULL',
      ChargeDescription: quote(description),
      ChargeFrequency: 'Usage-Based',
      ChargePeriodEnd: stamp(periodStart + to * 3_600_000),
      ChargePeriodStart: stamp(periodStart + from * 3_600_000),
      ConsumedQuantity: quantity.toFixed(6),
      ConsumedUnit: service.unit,
      ContractedCost: listCost.toFixed(10),
      ContractedUnitPrice: String(unitPrice),
      EffectiveCost: cost,
      InvoiceIssuerName: quote('Amazon Web Services, Inc.'),
      ListCost: listCost.toFixed(10),
      ListUnitPrice: String(unitPrice),
      PricingCategory: discount < 1 ? 'Committed' : 'Standard',
      PricingCurrency: currency,
      PricingCurrencyContractedUnitPrice: String(unitPrice),
      PricingCurrencyEffectiveCost: cost,
      PricingCurrencyListUnitPrice: String(unitPrice),
      PricingQuantity: quantity.toFixed(6),
      PricingUnit: service.unit,
      ProviderName: 'AWS',
      PublisherName: quote('Amazon Web Services, Inc.'),
      RegionId: regionId,
      RegionName: quote(regionName),
      ResourceId: service.resource(number),
      ResourceName: `${service.resourceType.toLowerCase().replace(' ', '-')}-${number}`,
      ResourceType: quote(service.resourceType),
      ServiceCategory: quote(service.category),
      ServiceName: quote(service.name),
      ServiceSubcategory: quote(service.subcategory),
      SkuId: sku,
      SkuPriceId: `${sku}.${regionId}`,
      SubAccountId: '210987654321',
      SubAccountName: 'workloads',
      SubAccountType: 'Account',
      Tags: tags,
      ServiceProviderName: 'AWS',
      HostProviderName: 'AWS',
      ...(version === '1.3' ? focus13Values(i, service, listCost * discount, quantity) : {}),
    };
    yield `${columns.map((column) => values[column] ?? (column.startsWith('x_') ? `${column}-${i % 7}` : 'NULL')).join(',')}\n`;
    if ((i + 1) % 100_000 === 0) options.progress?.(i + 1);
  }
}
