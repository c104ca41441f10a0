import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Db, Queryable } from '@costgov/db';
import { ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import {
  readFocus,
  storedColumns,
  type ContentEncoding,
  type FocusFileFacts,
  type ReadOptions,
} from './reader';
import { usageBasedSql } from './usage-based';

export interface CurrencyTotals {
  currency: string;
  billedCost: number;
  effectiveCost: number;
}

/**
 * Something about a stored file its uploader should know (the file was stored all the same): a stable
 * `code`, a sentence, and facts a client can use (`details`, all strings).
 */
export interface IngestWarning {
  code: string;
  message: string;
  details: Record<string, string>;
}

export interface IngestSummary {
  connectionId: string;
  rows: number;
  focusVersion: string;
  billingPeriods: string[];
  /** Each distinct BillingPeriodStart/End pair of the file, sorted (the end is exclusive). */
  billingPeriodRanges: Array<{ start: Date; end: Date }>;
  warnings: IngestWarning[];
  totals: CurrencyTotals[];
  rowsReplaced: number;
  bytes: number;
  durationMs: number;
}

export interface UploadInput {
  connectionId: string;
  /** identity (or empty) | gzip */
  contentEncoding: string;
  /** The file as sent, in chunks. */
  body: AsyncIterable<Uint8Array>;
}

const encodings: Record<string, ContentEncoding> = { '': 'identity', identity: 'identity', gzip: 'gzip' };

const columnList = storedColumns.map(([column]) => column).join(', ');

/** A literal for DDL, which takes no parameters (the values are ids and dates checked before). */
const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** Whether a row's spend follows usage: costgov's one rule (./usage-based). */
const usageBased = usageBasedSql();

/**
 * Whether a row's spend cannot carry tags: no ResourceId, or ChargeCategory Tax, Credit, Purchase or
 * Adjustment (the scanner's untaggableCategories). Its effective cost is the rollups' `untaggable_cost`,
 * left out of the cost posture's tag coverage; migration 0005 rolls up earlier rows by the same rule.
 */
const untaggable = `coalesce(resource_id, '') = '' OR charge_category IN ('Tax', 'Credit', 'Purchase', 'Adjustment')`;

/**
 * Uploads still loading write a heartbeat this often; one whose heartbeat is older than `staleAfterMs`
 * (its process is gone: a crash, a kill) is abandoned and its load table dropped by `sweepAbandoned`.
 */
export const uploadHeartbeat = { everyMs: 30_000, staleAfterMs: 10 * 60_000 };

/** Uploads of an earlier version (no heartbeat) are abandoned this long after they started. */
const abandonedAfterMs = 24 * 60 * 60 * 1000;

/**
 * An upload that replaces a period another upload stored less than this long before it began warns
 * (`replaced_recent_upload`): parts of one export come within minutes, a provider's restatement a day later.
 */
const recentReplacementSeconds = 15 * 60;

/** The upload a `replaced_recent_upload` warning names: its id, the periods replaced, how long before. */
interface RecentUpload {
  id: string;
  periods: string[];
  seconds: number;
}

/**
 * FOCUS uploads: the file streams (COPY) into a table of its own shaped like a partition of
 * `cost_records` while every row is checked; only a file without a problem is then swapped in, in one
 * transaction per connection: each billing period it carries replaces that period's partition
 * (migration 0006), its daily rollups are rebuilt from the new rows, and `costs.data.ingested` is written.
 * A file of one billing period (the common case) becomes the partition as loaded, its rows written once;
 * a file of several is split into one partition per period in the swap.
 */
export function costDataFactory({
  db,
  outbox,
  now,
  logger,
  readOptions,
  heartbeat = uploadHeartbeat,
}: {
  db: Db;
  outbox: Outbox;
  now: () => Date;
  logger?: Pick<Logger, 'warn'>;
  readOptions?: ReadOptions;
  /** How often a loading upload says it is alive, and when one that stopped is abandoned. */
  heartbeat?: { everyMs: number; staleAfterMs: number };
}) {
  /** The connection must be the team's (404 otherwise, also for another team's) and not disabled (409). */
  async function checkConnection(q: Queryable, teamId: string, connectionId: string, lock = false) {
    if (!looksLikeId('connection', connectionId)) throw new NotFoundError('Connection', connectionId);
    const { rows } = await q.query<{ status: string }>(
      `SELECT status FROM connections WHERE team_id = $1 AND id = $2${lock ? ' FOR SHARE' : ''}`,
      [teamId, connectionId],
    );
    if (!rows[0]) throw new NotFoundError('Connection', connectionId);
    if (rows[0].status === 'disabled') {
      throw new ConflictError(`Connection '${connectionId}' is disabled; enable it to upload cost data.`);
    }
  }

  async function upload(teamId: string, input: UploadInput): Promise<IngestSummary> {
    const started = performance.now();
    const encoding = encodings[input.contentEncoding];
    if (!encoding) {
      throw new ValidationError([
        { field: 'content_encoding', message: `must be identity or gzip, not '${input.contentEncoding}'` },
      ]);
    }
    await checkConnection(db, teamId, input.connectionId);

    const uploadId = randomUUID();
    // The table the file is loaded into; cost_uploads names it so a crash's leftover is swept.
    const staging = `cost_staging_${uploadId.replaceAll('-', '')}`;
    await db.query(
      `INSERT INTO cost_uploads (id, team_id, connection_id, status, staging_table, started_at, heartbeat_at)
       VALUES ($1, $2, $3, 'loading', $4, $5, $5)`,
      [uploadId, teamId, input.connectionId, staging, now()],
    );
    // Alive while the file streams (however slowly) and while its swap runs; a failed beat is retried
    // at the next one (the sweep waits for many missed beats).
    const beating = setInterval(() => {
      db.query(`UPDATE cost_uploads SET heartbeat_at = $2 WHERE id = $1 AND status = 'loading'`, [
        uploadId,
        now(),
      ]).catch((error: unknown) =>
        logger?.warn({ err: error, uploadId }, 'cost data upload heartbeat failed'),
      );
    }, heartbeat.everyMs);
    try {
      // Logged, like the partition it becomes (SET LOGGED would write it all again). Its connection and
      // upload columns come from defaults, dropped before it is attached.
      await db.exec(
        `CREATE TABLE ${staging} (LIKE cost_records INCLUDING DEFAULTS);
         ALTER TABLE ${staging} ALTER connection_id SET DEFAULT ${literal(input.connectionId)},
           ALTER upload_id SET DEFAULT ${literal(uploadId)}`,
      );
      // PGlite runs one COPY per chunk, each with a fixed cost: bigger chunks there.
      const chunkChars = db.kind === 'pglite' ? 2 * 1024 * 1024 : 256 * 1024;
      // The reader counts future charges and sums the totals as rows stream: no scan of them after.
      const chargedAfter = now();
      const reader = readFocus(input.body, encoding, { chunkChars, chargedAfter, ...readOptions });
      await db.copyIn(`${staging} (${columnList})`, reader.chunks);
      const facts = reader.facts();
      const warnings = futureCharges(facts.future, chargedAfter);
      // One period (a monthly export): on Postgres its table's scan index and statistics are built on
      // another connection while the swap's transaction rolls the rows up (PGlite has one connection).
      const prepared =
        facts.billingPeriods.length === 1 && db.kind === 'postgres' ? prepareTable(staging) : undefined;
      prepared?.catch(() => {}); // awaited by the swap, or dropped with the upload when it fails first
      const stored = await swapIn(teamId, input.connectionId, uploadId, staging, facts, prepared);
      if (stored.recent) warnings.push(replacedRecently(stored.recent));
      return {
        connectionId: input.connectionId,
        rows: facts.rows,
        focusVersion: facts.version,
        billingPeriods: facts.billingPeriods,
        billingPeriodRanges: facts.billingPeriodRanges,
        warnings,
        // Summed exactly by the reader, like sum(numeric) over the rows stored.
        totals: facts.totals.map((total) => ({
          currency: total.currency,
          billedCost: Number(total.billedCost),
          effectiveCost: Number(total.effectiveCost),
        })),
        rowsReplaced: stored.rowsReplaced,
        bytes: facts.bytes,
        durationMs: Math.round(performance.now() - started),
      };
    } catch (error) {
      await abandon(uploadId, staging, error);
      throw error;
    } finally {
      clearInterval(beating);
    }
  }

  /**
   * Rows charged after now (ChargePeriodStart in the future): stored and counted like the others, so
   * the uploader hears how many and up to when, a sign of a wrong date or a wrong clock. Counted by the
   * reader against the instant the upload began.
   */
  function futureCharges(future: FocusFileFacts['future'], at: Date): IngestWarning[] {
    const { rows: count, latest } = future;
    if (!count || !latest) return [];
    const nowText = at.toISOString().replace(/\.\d{3}Z$/, 'Z');
    return [
      {
        code: 'future_charges',
        message:
          `${count} ${count === 1 ? 'row is' : 'rows are'} charged in the future (ChargePeriodStart after ` +
          `${nowText}), the latest starting ${latest}; ${count === 1 ? 'it was' : 'they were'} stored and ` +
          'count towards spend like the others (budgets from their charge day on). ' +
          'Check the dates of the export.',
        details: { rows: String(count), latest_charge_period_start: latest, now: nowText },
      },
    ];
  }

  /**
   * The periods this upload replaced that another upload stored minutes before: what the parts of one
   * export sent one by one do (each replaces the period whole), which loses every part but the last.
   */
  function replacedRecently(recent: RecentUpload): IngestWarning {
    const periods = recent.periods.join(', ');
    return {
      code: 'replaced_recent_upload',
      message:
        `Billing period${recent.periods.length === 1 ? '' : 's'} ${periods} stored by another upload ` +
        `${recent.seconds} s ago (${recent.id}) ${recent.periods.length === 1 ? 'was' : 'were'} replaced ` +
        'whole by this file. If the two files are parts of one export, send the parts as one body, each ' +
        'with its header (costgov ingest DIR --parts does); a restatement of the period needs nothing.',
      details: { billing_periods: periods, upload_id: recent.id, seconds: String(recent.seconds) },
    };
  }

  /**
   * A period's table made ready to be attached: the root's cost_records_scan index (migration 0007), built
   * here so that ATTACH adopts it, and its statistics, which stay with it once attached. Without them the
   * planner takes the new period for one row, and the scan's window aggregates walked the whole index
   * instead of reading the table (2.3 s instead of 0.4 s for a COUNT over 1M rows); autovacuum would come
   * much later. A sample of 30,000 rows.
   */
  async function prepareTable(table: string, q: Queryable = db) {
    // One call, so one connection: the swap's transaction holds one and waits for this, which must not
    // wait for a second from a pool the other uploads' transactions may hold.
    await q.exec(
      `CREATE INDEX ON ${table} (connection_id, resource_id COLLATE "C", charge_period_start); ANALYZE ${table}`,
    );
  }

  /**
   * `prepared`: the one period's table already made ready (prepareTable, in flight on another connection):
   * the swap rolls the rows up meanwhile and waits for it before it alters and attaches the table (whose
   * lock the index build would wait for).
   */
  async function swapIn(
    teamId: string,
    connectionId: string,
    uploadId: string,
    staging: string,
    facts: FocusFileFacts,
    prepared?: Promise<void>,
  ) {
    return db.transaction(async (tx) => {
      // One swap per connection at a time: two uploads of one period leave the later one's rows only.
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('costs.cost_data'), hashtext($1))`, [
        connectionId,
      ]);
      await checkConnection(tx, teamId, connectionId, true); // disabled or deleted while the file streamed
      // The latest upload that stored one of these periods shortly before this one began (however long
      // this one took to stream): a part of one export before this one, most likely, whose rows this
      // upload replaces. Read here, under the connection's lock, before readers wait on the swap.
      const { rows: recent } = await tx.query<RecentUpload>(
        `SELECT id, ARRAY(SELECT to_char(p, 'YYYY-MM-DD') FROM unnest(billing_periods) p
             WHERE p = ANY($2::date[]) ORDER BY p) AS periods,
           round(extract(epoch FROM $3::timestamptz - finished_at))::int AS seconds
         FROM cost_uploads
         WHERE connection_id = $1 AND status = 'stored' AND billing_periods && $2::date[]
           AND finished_at > (SELECT started_at FROM cost_uploads WHERE id = $5)
                             - $4::int * interval '1 second'
         ORDER BY finished_at DESC LIMIT 1`,
        [connectionId, facts.billingPeriods, now(), recentReplacementSeconds, uploadId],
      );
      // Room for the rollup's grouping to stay in memory: a few thousand groups a month for most tenants,
      // but a tag set of its own per resource (a Name tag) makes one a resource and day. Bounded: a larger
      // file spills the excess; the hash multiplier is 1 so the grouping takes no more than this.
      await tx.query(`SET LOCAL work_mem = '512MB'`);
      await tx.query(`SET LOCAL hash_mem_multiplier = 1`);
      const periods = facts.billingPeriods;
      // One table per period, each with a CHECK constraint stating its bounds, added here (a scan of a
      // table nobody else reads) so that attaching it skips the validation scan under the lock.
      const bounds = (period: string) =>
        `CONSTRAINT period_bounds CHECK (connection_id = ${literal(connectionId)} AND billing_period_start = ${literal(period)})`;
      const partitions: Array<{ period: string; table: string; rows: number }> = [];
      if (periods.length === 1) {
        partitions.push({ period: periods[0]!, table: staging, rows: facts.rows });
      } else {
        for (const [i, period] of periods.entries()) {
          const table = `${staging}_${i}`;
          await tx.exec(`CREATE TABLE ${table} (LIKE cost_records INCLUDING DEFAULTS, ${bounds(period)})`);
          const split = await tx.query(
            `INSERT INTO ${table} SELECT * FROM ${staging} WHERE billing_period_start = $1::date`,
            [period],
          );
          partitions.push({ period, table, rows: split.rowCount });
        }
        // Each row went to its period's table, named as the reader named it: a row stored under another
        // billing_period_start than its period's name would be dropped with the load table here.
        const splitRows = partitions.reduce((sum, partition) => sum + partition.rows, 0);
        if (splitRows !== facts.rows) {
          throw new Error(
            `The upload's ${facts.rows} rows split into ${splitRows} rows of its billing periods ` +
              `(${periods.join(', ')}); nothing was stored.`,
          );
        }
      }
      // The daily rollup of the periods (migration 0009): what every spend query reads, summed per day,
      // billing period, currency, tag set and usage-based flag straight from the rows, replacing the
      // periods' rows of the upload before.
      await tx.query(
        `DELETE FROM daily_spend WHERE connection_id = $1 AND billing_period_start = ANY($2::date[])`,
        [connectionId, periods],
      );
      await tx.query(
        `INSERT INTO daily_spend (team_id, connection_id, day, billing_period_start, billing_currency, tags,
           tags_hash, usage_based, billed_cost, effective_cost, untaggable_cost, records)
         SELECT $1, $2, day, billing_period_start, billing_currency, tags, md5(tags::text), usage_based,
           sum(billed_cost), sum(effective_cost), coalesce(sum(untaggable_cost), 0), count(*)
         FROM (SELECT (charge_period_start AT TIME ZONE 'UTC')::date AS day, billing_period_start,
             billing_currency, coalesce(tags, '{}') AS tags, ${usageBased} AS usage_based, billed_cost,
             effective_cost, CASE WHEN ${untaggable} THEN effective_cost END AS untaggable_cost
           FROM ${staging}) rows
         GROUP BY day, billing_period_start, billing_currency, tags, usage_based`,
        [teamId, connectionId],
      );
      if (periods.length === 1) {
        await prepared;
        await tx.exec(
          `ALTER TABLE ${staging} ALTER connection_id DROP DEFAULT, ALTER upload_id DROP DEFAULT,
             ADD ${bounds(periods[0]!)}`,
        );
      }
      // The partitions change last but for a few one-row writes: from here to the commit, readers of the
      // connection's raw rows wait (the drop of an old partition locks the connection's table). Each
      // table is made ready first (unless it was already), while those readers do not wait yet.
      let rowsReplaced = 0;
      for (const { period, table, rows } of partitions) {
        if (!prepared) await prepareTable(table, tx);
        const { rows: swapped } = await tx.query<{ replaced: number }>(
          'SELECT cost_records_swap($1, $2::date, $3, $4, $5) AS replaced',
          [connectionId, period, table, rows, uploadId],
        );
        rowsReplaced += Number(swapped[0]!.replaced);
      }
      if (partitions[0]?.table !== staging) await tx.exec(`DROP TABLE ${staging}`);
      const at = now();
      await tx.query(`UPDATE connections SET last_ingested_at = $2 WHERE id = $1`, [connectionId, at]);
      await tx.query(
        `UPDATE cost_uploads SET status = 'stored', focus_version = $2, rows = $3, rows_replaced = $4,
           bytes = $5, billing_periods = $6::date[], finished_at = $7 WHERE id = $1`,
        [uploadId, facts.version, facts.rows, rowsReplaced, facts.bytes, periods, at],
      );
      await outbox.addMessage(tx, {
        type: 'costs.data.ingested',
        subject: connectionId,
        schema: events.CostDataIngestedSchema,
        message: create(events.CostDataIngestedSchema, {
          connectionId,
          teamId,
          rows: BigInt(facts.rows),
          billingPeriods: periods,
          firstChargeDay: facts.firstChargeDay,
          lastChargeDay: facts.lastChargeDay,
        }),
      });
      return { rowsReplaced, recent: recent[0] };
    });
  }

  /** An upload that did not make it: its staging table goes, its log row says why. */
  async function abandon(uploadId: string, staging: string, error: unknown) {
    const refused =
      error instanceof ValidationError || error instanceof NotFoundError || error instanceof ConflictError;
    try {
      await db.exec(`DROP TABLE IF EXISTS ${staging}`);
      await db.query(`UPDATE cost_uploads SET status = $2, error = $3, finished_at = $4 WHERE id = $1`, [
        uploadId,
        refused ? 'refused' : 'failed',
        error instanceof Error ? error.message.slice(0, 1000) : String(error),
        now(),
      ]);
    } catch (cleanup) {
      // The sweep at the next start drops what is left; the upload's own error is what the caller hears.
      logger?.warn({ err: cleanup, uploadId }, 'cleaning up a failed cost data upload failed');
    }
  }

  /**
   * Drops load tables of uploads that never ended (a crash mid-upload), once they are surely dead: no
   * heartbeat for `staleAfterMs` (an earlier version's upload, without heartbeats: a day after its start).
   * Each is marked failed first, only if still loading, so a swap that just finished keeps its table.
   * Run at start and periodically (module.ts).
   */
  async function sweepAbandoned(): Promise<number> {
    const at = now();
    const { rows } = await db.query<{ id: string; staging_table: string }>(
      `UPDATE cost_uploads SET status = 'failed', error = 'abandoned', finished_at = $3
       WHERE status = 'loading'
         AND (heartbeat_at < $1 OR (heartbeat_at IS NULL AND started_at < $2))
       RETURNING id, staging_table`,
      [new Date(at.getTime() - heartbeat.staleAfterMs), new Date(at.getTime() - abandonedAfterMs), at],
    );
    for (const row of rows) {
      await db.exec(`DROP TABLE IF EXISTS ${row.staging_table}`);
      logger?.warn(
        { uploadId: row.id, staging_table: row.staging_table },
        'dropped an abandoned cost data upload',
      );
    }
    return rows.length;
  }

  return { upload, sweepAbandoned };
}

export type CostData = ReturnType<typeof costDataFactory>;
