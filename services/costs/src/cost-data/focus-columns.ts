/** FOCUS column names by the version that introduced them, and how the reader checks the typed ones. */

const focus10 = [
  'AvailabilityZone',
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'CommitmentDiscountCategory',
  'CommitmentDiscountId',
  'CommitmentDiscountName',
  'CommitmentDiscountStatus',
  'CommitmentDiscountType',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'ContractedUnitPrice',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'ListUnitPrice',
  'PricingCategory',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'RegionId',
  'RegionName',
  'ResourceId',
  'ResourceName',
  'ResourceType',
  'ServiceCategory',
  'ServiceName',
  'SkuId',
  'SkuPriceId',
  'SubAccountId',
  'SubAccountName',
  'Tags',
] as const;

const added11 = [
  'CapacityReservationId',
  'CapacityReservationStatus',
  'CommitmentDiscountQuantity',
  'CommitmentDiscountUnit',
  'ServiceSubcategory',
  'SkuMeter',
  'SkuPriceDetails',
] as const;

const added12 = [
  'BillingAccountType',
  'InvoiceId',
  'PricingCurrency',
  'PricingCurrencyContractedUnitPrice',
  'PricingCurrencyEffectiveCost',
  'PricingCurrencyListUnitPrice',
  'SubAccountType',
] as const;

export type FocusVersion = '1.0' | '1.1' | '1.2';

/** Every column each version defines: 43, 50 and 57. */
export const focusColumns: Record<FocusVersion, readonly string[]> = {
  '1.0': focus10,
  '1.1': [...focus10, ...added11],
  '1.2': [...focus10, ...added11, ...added12],
};

/**
 * Columns the ingestion relies on: not null in every FOCUS version (the cost, its currency and the two
 * periods), so a file without one of them, or a row with one of them missing, is refused.
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

export type ColumnKind = 'decimal' | 'datetime' | 'currency' | 'tags' | 'json';

/** Typed columns checked on every row when the file has them; the others are text. */
export const columnKinds: Record<string, ColumnKind> = {
  BilledCost: 'decimal',
  EffectiveCost: 'decimal',
  ListCost: 'decimal',
  ContractedCost: 'decimal',
  ListUnitPrice: 'decimal',
  ContractedUnitPrice: 'decimal',
  PricingQuantity: 'decimal',
  ConsumedQuantity: 'decimal',
  CommitmentDiscountQuantity: 'decimal',
  PricingCurrencyContractedUnitPrice: 'decimal',
  PricingCurrencyEffectiveCost: 'decimal',
  PricingCurrencyListUnitPrice: 'decimal',
  BillingPeriodStart: 'datetime',
  BillingPeriodEnd: 'datetime',
  ChargePeriodStart: 'datetime',
  ChargePeriodEnd: 'datetime',
  BillingCurrency: 'currency',
  PricingCurrency: 'currency',
  Tags: 'tags',
  SkuPriceDetails: 'json',
  ContractApplied: 'json',
  AllocatedMethodDetails: 'json',
  AllocatedTags: 'tags',
};

/**
 * The version the header matches: the newest one whose own columns appear. Providers leave out
 * conditional columns, so "all 57 present" would misread most real 1.2 exports; other columns are allowed.
 */
export function focusVersionOf(header: readonly string[]): FocusVersion {
  const present = new Set(header);
  if (added12.some((column) => present.has(column))) return '1.2';
  if (added11.some((column) => present.has(column))) return '1.1';
  return '1.0';
}
