/**
 * The FOCUS columns of the Cost and Usage dataset, one table: the specification version each column
 * entered, the one that deprecated it where it was, and how the reader checks the typed ones. Everything
 * else about versions (what a version defines, which version a header matches, what the generator
 * writes) is derived from it.
 */

export const focusVersions = ['1.0', '1.1', '1.2', '1.3'] as const;
export type FocusVersion = (typeof focusVersions)[number];

/**
 * How a value is checked: `decimal`, `datetime`, `currency` (ISO 4217), `tags` (FOCUS Key-Value Format:
 * a JSON object of strings, numbers, booleans and nulls, stored with every value a string), `json` (a
 * JSON object), `contractApplied` (the FOCUS 1.3 ContractApplied object). Columns
 * without a kind are text; `PricingCurrency` is text on purpose: FOCUS 1.2 allows virtual currencies
 * (`Token`, `Credits`) there, while `BillingCurrency` stays ISO 4217.
 */
export type ColumnKind = 'decimal' | 'datetime' | 'currency' | 'tags' | 'json' | 'contractApplied';

export interface FocusColumn {
  name: string;
  /** The version that introduced the column. */
  introduced: FocusVersion;
  /** The version that deprecated it (still defined, no longer expected); none when it is current. */
  deprecated?: FocusVersion;
  kind?: ColumnKind;
}

const column = (
  name: string,
  introduced: FocusVersion,
  more: { kind?: ColumnKind; deprecated?: FocusVersion } = {},
): FocusColumn => ({ name, introduced, ...more });

export const focusColumnTable: readonly FocusColumn[] = [
  column('AvailabilityZone', '1.0'),
  column('BilledCost', '1.0', { kind: 'decimal' }),
  column('BillingAccountId', '1.0'),
  column('BillingAccountName', '1.0'),
  column('BillingCurrency', '1.0', { kind: 'currency' }),
  column('BillingPeriodEnd', '1.0', { kind: 'datetime' }),
  column('BillingPeriodStart', '1.0', { kind: 'datetime' }),
  column('ChargeCategory', '1.0'),
  column('ChargeClass', '1.0'),
  column('ChargeDescription', '1.0'),
  column('ChargeFrequency', '1.0'),
  column('ChargePeriodEnd', '1.0', { kind: 'datetime' }),
  column('ChargePeriodStart', '1.0', { kind: 'datetime' }),
  column('CommitmentDiscountCategory', '1.0'),
  column('CommitmentDiscountId', '1.0'),
  column('CommitmentDiscountName', '1.0'),
  column('CommitmentDiscountStatus', '1.0'),
  column('CommitmentDiscountType', '1.0'),
  column('ConsumedQuantity', '1.0', { kind: 'decimal' }),
  column('ConsumedUnit', '1.0'),
  column('ContractedCost', '1.0', { kind: 'decimal' }),
  column('ContractedUnitPrice', '1.0', { kind: 'decimal' }),
  column('EffectiveCost', '1.0', { kind: 'decimal' }),
  column('InvoiceIssuerName', '1.0'),
  column('ListCost', '1.0', { kind: 'decimal' }),
  column('ListUnitPrice', '1.0', { kind: 'decimal' }),
  column('PricingCategory', '1.0'),
  column('PricingQuantity', '1.0', { kind: 'decimal' }),
  column('PricingUnit', '1.0'),
  column('ProviderName', '1.0', { deprecated: '1.3' }),
  column('PublisherName', '1.0', { deprecated: '1.3' }),
  column('RegionId', '1.0'),
  column('RegionName', '1.0'),
  column('ResourceId', '1.0'),
  column('ResourceName', '1.0'),
  column('ResourceType', '1.0'),
  column('ServiceCategory', '1.0'),
  column('ServiceName', '1.0'),
  column('SkuId', '1.0'),
  column('SkuPriceId', '1.0'),
  column('SubAccountId', '1.0'),
  column('SubAccountName', '1.0'),
  column('Tags', '1.0', { kind: 'tags' }),

  column('CapacityReservationId', '1.1'),
  column('CapacityReservationStatus', '1.1'),
  column('CommitmentDiscountQuantity', '1.1', { kind: 'decimal' }),
  column('CommitmentDiscountUnit', '1.1'),
  column('ServiceSubcategory', '1.1'),
  column('SkuMeter', '1.1'),
  column('SkuPriceDetails', '1.1', { kind: 'json' }),

  column('BillingAccountType', '1.2'),
  column('InvoiceId', '1.2'),
  column('PricingCurrency', '1.2'),
  column('PricingCurrencyContractedUnitPrice', '1.2', { kind: 'decimal' }),
  column('PricingCurrencyEffectiveCost', '1.2', { kind: 'decimal' }),
  column('PricingCurrencyListUnitPrice', '1.2', { kind: 'decimal' }),
  column('SubAccountType', '1.2'),

  column('AllocatedMethodDetails', '1.3', { kind: 'json' }),
  column('AllocatedMethodId', '1.3'),
  column('AllocatedResourceId', '1.3'),
  column('AllocatedResourceName', '1.3'),
  column('AllocatedTags', '1.3', { kind: 'tags' }),
  column('ContractApplied', '1.3', { kind: 'contractApplied' }),
  column('HostProviderName', '1.3'),
  column('ServiceProviderName', '1.3'),
];

const rank = (version: FocusVersion) => focusVersions.indexOf(version);

/** Every column each version defines (deprecated ones included): 43, 50, 57 and 65. */
export const focusColumns = Object.fromEntries(
  focusVersions.map((version) => [
    version,
    focusColumnTable.filter((c) => rank(c.introduced) <= rank(version)).map((c) => c.name),
  ]),
) as unknown as Record<FocusVersion, readonly string[]>;

/** The columns a version expects: those it defines and has not deprecated. */
export const currentColumns = (version: FocusVersion): string[] =>
  focusColumnTable
    .filter(
      (c) => rank(c.introduced) <= rank(version) && (!c.deprecated || rank(c.deprecated) > rank(version)),
    )
    .map((c) => c.name);

/**
 * Columns the ingestion relies on: not null in every FOCUS version (the cost, its currency and the two
 * periods), so a file without one of them, or a row with one of them missing, is refused. Nothing else
 * is required: `ProviderName` and `PublisherName`, deprecated by 1.3 for `ServiceProviderName` and
 * `HostProviderName`, may be absent.
 */
export const requiredColumns = [
  'BilledCost',
  'EffectiveCost',
  'BillingCurrency',
  'BillingPeriodStart',
  'BillingPeriodEnd',
  'ChargePeriodStart',
  'ChargePeriodEnd',
] as const;

/** Typed columns checked on every row when the file has them; the others are text. */
export const columnKinds: Record<string, ColumnKind> = Object.fromEntries(
  focusColumnTable.flatMap((c) => (c.kind ? [[c.name, c.kind]] : [])),
);

/**
 * The version the header matches: the newest one whose own columns appear. Providers leave out
 * conditional columns, so "all columns present" would misread most real exports; other columns are
 * allowed.
 */
export function focusVersionOf(header: readonly string[]): FocusVersion {
  const present = new Set(header);
  let version: FocusVersion = '1.0';
  for (const c of focusColumnTable) {
    if (present.has(c.name) && rank(c.introduced) > rank(version)) version = c.introduced;
  }
  return version;
}
