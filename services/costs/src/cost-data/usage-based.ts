/**
 * costgov's one definition of a usage-based charge: spend that follows usage, so a forecast projects it
 * at its run rate and an anomaly rule may judge it day by day. Every other charge (a recurring fee, a
 * one-time purchase, a tax, a credit, an adjustment) is counted once as booked.
 *
 * A row is usage-based when its FOCUS `ChargeCategory` is `Usage` and its `ChargeFrequency` is
 * `Usage-Based`, both compared in any case (the FOCUS sample writes `Usage-based`). A null column (left
 * out of the file, or `NULL`/`null`/empty) does not decide: a row without a `ChargeFrequency` is judged
 * by its category alone, a row without a `ChargeCategory` by its frequency alone, and a row with
 * neither (the smallest files) is usage-based. So `Purchase`, `Tax`, `Credit` and `Adjustment` rows are
 * never usage-based, whatever their frequency, and `Recurring` and `One-Time` charges never are,
 * whatever their category.
 *
 * The rollup (`daily_spend.usage_based`, written on upload; by migrations 0005 and 0009 before), the scan data's
 * `usage_cost` and the docs (docs/decisions.md) follow this rule; migration 0005 holds the fragment as
 * text, which a test compares with this one.
 */
export function usageBasedSql(alias = ''): string {
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  return (
    `(coalesce(lower(${column('charge_category')}), 'usage') = 'usage'` +
    ` AND coalesce(lower(${column('charge_frequency')}), 'usage-based') = 'usage-based')`
  );
}
