export interface FocusFileOptions {
  /** `ServiceName` of every row; `EC2` by default. */
  service?: string;
  /** Spreads the rows over the month's days so far (one per day, cycling) instead of its first hour. */
  spreadOverDays?: boolean;
  /** `ResourceId` of row `i`; `i-<i>` by default. */
  resourceId?: (index: number) => string;
}

/**
 * A FOCUS export of the current month (UTC, USD) with one row per cost, for a connection's upload: the
 * smallest file the costs service accepts, so tests breach budgets with the amounts they choose.
 */
export function focusFile(costs: number[], options: FocusFileOptions = {}): string {
  const { service = 'EC2', spreadOverDays = false, resourceId = (i: number) => `i-${i}` } = options;
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const stamp = (d: Date) => d.toISOString().replace('.000Z', 'Z');
  const header =
    'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId';
  const lines = costs.map((cost, i) => {
    const day = spreadOverDays ? new Date(start.getTime() + (i % now.getUTCDate()) * 86_400_000) : start;
    return [
      cost,
      cost,
      'USD',
      stamp(start),
      stamp(end),
      stamp(day),
      stamp(new Date(day.getTime() + 3_600_000)),
      service,
      resourceId(i),
    ].join(',');
  });
  return `${header}\n${lines.join('\n')}\n`;
}
