import type { ScanAggregates, ScanResource } from './types';

const hourMs = 3_600_000;
const dayMs = 86_400_000;
/** Average days in a month: a monthly figure is the cost observed per covered day times this. */
export const daysPerMonth = 30.44;

/**
 * Days of data a rule that judges around-the-clock behaviour needs for a resource before it fires: two
 * weeks hold every weekday and weekend twice, one month of data is enough. Commitment advice waits
 * for a full month (steady-on-demand's `minCommitmentDays`).
 */
export const minJudgedDays = 14;

/** The span the data covers: its first charge period start to its last end (the window when empty). */
export function dataSpan(data: ScanAggregates): { start: number; end: number } {
  const start = Date.parse(data.dataStart || data.windowStart);
  const end = Date.parse(data.dataEnd || data.windowEnd);
  return Number.isFinite(start) && Number.isFinite(end) && end > start
    ? { start, end }
    : { start: Date.parse(data.windowStart), end: Date.parse(data.windowEnd) };
}

/**
 * Days a resource may go unbilled before its connection's data ends and still be taken as there: exports
 * bill a day or two late, and a daily export's last day may be partial.
 */
export const goneAfterDays = 3;

/**
 * Where a connection's data ends: the last charge period end of its usage-based rows (costs' per-connection
 * `dataEnd`, so a tax or support row dated to the end of the month and another connection's later export
 * do not move it), else the data's end; never after `now`.
 */
export function connectionEnd(data: ScanAggregates, connectionId: string, now?: Date): number {
  const own = Date.parse(data.totals.find((totals) => totals.connectionId === connectionId)?.dataEnd ?? '');
  const end = Number.isFinite(own) ? own : dataSpan(data).end;
  return now ? Math.min(end, now.getTime()) : end;
}

/** Hours the data covers (at least 1). */
export const dataHours = (data: ScanAggregates): number => {
  const { start, end } = dataSpan(data);
  return Math.max(1, (end - start) / hourMs);
};

/** Days the data covers (at least one hour's worth). */
export const dataDays = (data: ScanAggregates): number => dataHours(data) / 24;

/** Days from a resource's first seen to its last seen: the days its cost is spread over (at least 1). */
export const coveredDays = (resource: Pick<ScanResource, 'firstSeen' | 'lastSeen'>): number =>
  Math.max(1, (Date.parse(resource.lastSeen) - Date.parse(resource.firstSeen)) / dayMs);

/** The span from first to last seen as a person reads it: "5 hours", "1 day", "20.5 days". */
export function spanText(item: Pick<ScanResource, 'firstSeen' | 'lastSeen'>): string {
  const hours = (Date.parse(item.lastSeen) - Date.parse(item.firstSeen)) / 3_600_000;
  if (hours < 24) return `${Math.round(hours)} hour${Math.round(hours) === 1 ? '' : 's'}`;
  const days = Math.round((hours / 24) * 100) / 100;
  return `${days} day${days === 1 ? '' : 's'}`;
}

/** What a cost observed over `days` covered days comes to per month (a span under a day counts as one). */
export const perMonth = (cost: number, days: number): number => (cost / Math.max(days, 1)) * daysPerMonth;

/** A resource's cost per month, over the days it was seen. */
export const monthlyCostOf = (resource: ScanResource): number =>
  perMonth(resource.effectiveCost, coveredDays(resource));

/** Whole days a projection rests on, as `projected_from_days` states it (at least 1). */
export const projectedDays = (days: number): number => Math.max(1, Math.round(days));

/** Rounded to cents, for money in findings. */
export const money = (amount: number): number => Math.round(amount * 100) / 100;

/** Priced by the hour (instances, reserved capacity, addresses): the resource is billed while it exists. */
export const isHourly = (resource: ScanResource): boolean =>
  /hour|hrs/i.test(resource.pricingUnit) || /hour|hrs/i.test(resource.consumedUnit);

/**
 * Hours the resource ran: the hours its charge periods cover, or fewer when it is priced by the hour and
 * its pricing quantity says so (a daily export bills 8 running hours in a 24-hour charge period).
 */
export const runningHours = (resource: ScanResource): number =>
  /hour|hrs/i.test(resource.pricingUnit) && resource.pricingQuantity > 0
    ? Math.min(resource.hoursSeen, resource.pricingQuantity)
    : resource.hoursSeen;

/** What kind of resource it is, for the finding: FOCUS ResourceType, else its service. */
export const resourceTypeOf = (resource: ScanResource): string =>
  resource.resourceType || resource.serviceName || 'resource';
