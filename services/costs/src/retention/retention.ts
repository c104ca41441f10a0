import type { Db } from '@costgov/db';
import { Violations } from '@costgov/errors';
import type { Logger } from '@costgov/log';

/** Longest retention a team may set: a hundred years, which is forever in practice. */
export const maxRetentionMonths = 1200;

export interface RawRetention {
  teamId: string;
  /** Months of raw FOCUS rows kept before the current month; null: kept forever. */
  rawRetentionMonths: number | null;
}

/**
 * The first billing period a retention of `months` keeps at `at`: the first day of the month `months`
 * months before the current UTC month. A period starting before it is past retention. Pure, so the sweep
 * and its tests share one reading of "months".
 */
export function retainedFrom(at: Date, months: number): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() - months, 1));
}

/**
 * Retention of raw rows per team: a team may keep its raw FOCUS rows (what scans read) for a number of
 * months; the sweep drops whole billing-period partitions past it. The daily rollup (daily_spend, what
 * spend, budgets and posture read) is never dropped.
 */
export function retentionFactory({
  db,
  now,
  logger,
}: {
  db: Db;
  now: () => Date;
  logger?: Pick<Logger, 'info' | 'warn'>;
}) {
  async function getRawRetention(teamId: string): Promise<RawRetention> {
    const { rows } = await db.query<{ raw_retention_months: number | null }>(
      'SELECT raw_retention_months FROM cost_retention WHERE team_id = $1',
      [teamId],
    );
    return { teamId, rawRetentionMonths: rows[0]?.raw_retention_months ?? null };
  }

  /** Sets the months of raw rows kept; undefined keeps them forever. */
  async function setRawRetention(teamId: string, months: number | undefined): Promise<RawRetention> {
    new Violations()
      .check(
        months === undefined || (Number.isInteger(months) && months >= 1 && months <= maxRetentionMonths),
        'raw_retention_months',
        `must be a whole number of months from 1 to ${maxRetentionMonths}`,
      )
      .throwIfAny();
    await db.query(
      `INSERT INTO cost_retention (team_id, raw_retention_months, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (team_id) DO UPDATE SET raw_retention_months = excluded.raw_retention_months,
         updated_at = excluded.updated_at`,
      [teamId, months ?? null, now()],
    );
    return { teamId, rawRetentionMonths: months ?? null };
  }

  /**
   * Drops the raw-row partitions of billing periods past their team's retention, one per transaction
   * (each locks only its connection's table, for a moment), and logs each. Returns the partitions dropped.
   */
  async function sweep(): Promise<number> {
    const at = now();
    const { rows } = await db.query<{
      team_id: string;
      connection_id: string;
      period: string;
      rows: number | null;
      months: number;
    }>(
      `SELECT c.team_id, p.connection_id, to_char(p.billing_period_start, 'YYYY-MM-DD') AS period, p.rows,
         r.raw_retention_months AS months
       FROM cost_record_periods p
       JOIN connections c ON c.id = p.connection_id
       JOIN cost_retention r ON r.team_id = c.team_id
       WHERE r.raw_retention_months IS NOT NULL
         AND p.billing_period_start < (date_trunc('month', $1::timestamptz AT TIME ZONE 'UTC')
           - make_interval(months => r.raw_retention_months))::date
       ORDER BY p.connection_id, p.billing_period_start`,
      [at],
    );
    let dropped = 0;
    for (const row of rows) {
      const result = await db.transaction((tx) =>
        tx.query<{ dropped: number }>('SELECT cost_records_drop($1, $2::date) AS dropped', [
          row.connection_id,
          row.period,
        ]),
      );
      dropped += Number(result.rows[0]!.dropped);
      logger?.info(
        {
          team_id: row.team_id,
          connection_id: row.connection_id,
          billing_period_start: row.period,
          rows: row.rows === null ? undefined : Number(row.rows),
          raw_retention_months: row.months,
          retained_from: retainedFrom(at, row.months).toISOString().slice(0, 10),
        },
        'dropped raw cost rows past retention',
      );
    }
    return dropped;
  }

  return { getRawRetention, setRawRetention, sweep };
}

export type Retention = ReturnType<typeof retentionFactory>;
