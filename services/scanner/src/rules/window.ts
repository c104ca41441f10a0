import type { ScanData, ScanResource } from './types';

const hourMs = 3_600_000;
/** Average days in a month, for run rates. */
export const daysPerMonth = 30.44;

export const windowHours = (data: ScanData): number =>
  Math.max(1, (Date.parse(data.windowEnd) - Date.parse(data.windowStart)) / hourMs);

export const windowDays = (data: ScanData): number => windowHours(data) / 24;

/** What a cost over the whole window comes to per month. */
export const monthly = (cost: number, data: ScanData): number => (cost / windowDays(data)) * daysPerMonth;

/** Rounded to cents, for money in findings. */
export const money = (amount: number): number => Math.round(amount * 100) / 100;

/** Priced by the hour (instances, reserved capacity, addresses): the resource is billed while it exists. */
export const isHourly = (resource: ScanResource): boolean =>
  /hour|hrs/i.test(resource.pricingUnit) || /hour|hrs/i.test(resource.consumedUnit);

/** What kind of resource it is, for the finding: FOCUS ResourceType, else its service. */
export const resourceTypeOf = (resource: ScanResource): string =>
  resource.resourceType || resource.serviceName || 'resource';
