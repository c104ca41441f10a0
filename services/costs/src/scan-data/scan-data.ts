import { costs } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { BadRequestError, ValidationError } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';
import type { DomainShape } from '@costgov/rpc';
import { usageBasedSql } from '../cost-data/usage-based';

const dayMs = 86_400_000;
const defaultDays = 62;
const defaultMaxResources = 5000;
/** Most resources in one page. */
const maxMaxResources = 10_000;
const maxTagPairs = 2000;
const maxCommitments = 2000;
/** Most shards a scan may be split into. */
export const maxShards = 4096;
const workMem = '64MB';
/**
 * A page reads its range of the cost_records_scan index in order and stops at its LIMIT. With a
 * partition's statistics the planner rather reads the whole range (a bitmap or a parallel scan) and sorts
 * it: 30 % slower for one page of a shard, and far worse for the first pages of a large range, and
 * parallel workers would take cores the other shards' pages need.
 */
const indexOrder = ['enable_seqscan = off', 'enable_bitmapscan = off', 'max_parallel_workers_per_gather = 0'];
/**
 * The aggregates group the window's rows by hashing them. The planner estimates the groups of several
 * columns (or of an expression such as the day) far above what there are (a million for 100,000 resources,
 * or for 180 days and services, at 10M rows) and sorts the rows instead, spilling them to disk: on 10M
 * rows the light aggregates took 34 s and the daily series 21 s that way. A hash that outgrows work_mem
 * spills in batches, no worse than the sort. A disabled plan's cost is huge, which would have Postgres
 * compile the query (JIT, half a second) even for a small window: JIT is off for these queries.
 */
const hashGroups = ['enable_sort = off', 'jit = off'];
/**
 * Bytes of one page, as protobuf encodes it (resourceBytes; the aggregates as JSON, longer): well under
 * gRPC's 4 MB message limit. A page ends when its next resource would pass this (it carries at least one
 * resource, whose tags a FOCUS row cannot make near 4 MB).
 */
const pageBytes = 3_000_000;

export interface ScanDataRequest {
  connectionIds: string[];
  until?: Date;
  days?: number;
  maxResources?: number;
  /** Page cursor: the key of the previous page's last resource; unset for the first page. */
  after?: { connectionId: string; resourceId: string };
  /**
   * A shard: only the resources with `from <= resource_id < to` in byte order (COLLATE "C"); an empty
   * bound is open on its side.
   */
  range?: { from: string; to: string };
  /**
   * With parts COUNT: the bounds splitting the (range's) resource ids into this many shards; with
   * AGGREGATES the whole window's, from the aggregates' own pass.
   */
  splitInto?: number;
  /** What to answer (costs.v1 ScanDataParts); resources with every aggregate on the first page by default. */
  parts?: costs.ScanDataParts;
}

/**
 * The answer as this side holds it: the proto's GetScanDataResponse (costs.v1, what the scanner reads)
 * with Dates for its timestamps and null for an absent list or contracted cost.
 */
export type ScanDataResult = DomainShape<typeof costs.GetScanDataResponseSchema>;
type ScanResource = DomainShape<typeof costs.ScanResourceSchema>;

// Rows of the window: the billing-period bounds let the (connection_id, billing_period_start) index narrow
// the scan. A month either side: a charge period may lie outside its billing period (the sample has an
// Oracle row charged 30 September in the period starting 1 October).
const scoped = `SELECT * FROM cost_records WHERE connection_id = ANY ($1::text[])
  AND billing_period_start >= ($2::timestamptz - interval '32 days')::date AND billing_period_start < ($3::timestamptz + interval '32 days')::date
  AND charge_period_start >= $2::timestamptz AND charge_period_start < $3::timestamptz`;

/**
 * Shards are ranges of resource ids in byte order (COLLATE "C": the same on PGlite and Postgres whatever
 * the database's collation, and the order of the page cursor and of the cost_records_scan index), by the
 * id alone: one id billed by several connections falls in one shard, so a shard holds every finding about
 * a resource. `first` is the number of the range's first parameter: its SQL and parameters.
 */
const inRange = (range: { from: string; to: string }, first: number) => {
  const bounds = [
    ...(range.from ? [['>=', range.from] as const] : []),
    ...(range.to ? [['<', range.to] as const] : []),
  ];
  return {
    sql: bounds.map(([op], i) => ` AND resource_id COLLATE "C" ${op} $${first + i}::text`).join(''),
    params: bounds.map(([, value]) => value),
  };
};

/**
 * Shard bounds as an SQL array: the distinct resource ids `ids` yields (one column, `resource_id`, COLLATE
 * "C"), numbered in byte order; shard i (from 0) of `parts` starts at number 1 + floor(i * n / parts), so
 * shards differ in size by one at most and repeat a bound (an empty shard) only when there are fewer ids
 * than shards. The wanted numbers are computed first and joined on the number (a hash join): joining on
 * an expression of both sides compared every id with every shard, 3 s for 100,000 ids and 511 shards.
 */
const shardBoundsOf = (ids: string, parts: string) =>
  `ARRAY(WITH numbered AS MATERIALIZED (
       SELECT resource_id, row_number() OVER (ORDER BY resource_id) AS rn FROM (${ids}) ids)
     SELECT numbered.resource_id FROM (
       SELECT i, 1 + (i::bigint * (SELECT count(*) FROM numbered)) / ${parts} AS rn
       FROM generate_series(1, ${parts} - 1) AS i) wanted
     JOIN numbered ON numbered.rn = wanted.rn ORDER BY wanted.i)`;

/** The order of ids in shards and pages: UTF-8 bytes, as Postgres compares them COLLATE "C". */
export const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

// Data transfer: usage priced per GB (storage is priced per GB-month), log ingestion aside.
const dataTransfer = `charge_category = 'Usage' AND lower(coalesce(pricing_unit, consumed_unit, '')) IN ('gb', 'gib')
  AND coalesce(service_category, '') <> 'Management and Governance'`;

// Usage-based charges by costgov's one rule (cost-data/usage-based.ts): recurring fees, one-time
// purchases, taxes, credits and adjustments are not daily usage.
const usageBased = usageBasedSql();

// Charges that cannot carry tags nor belong to a resource, by FOCUS ChargeCategory (the scanner's
// untaggableCategories): left out of the untagged and unattributed totals, counted apart.
const untaggableCategory = `coalesce(charge_category IN ('Tax', 'Credit', 'Purchase', 'Adjustment'), false)`;

/** JSON length of the items (an upper bound of their protobuf size). */
const jsonBytes = (items: unknown[]) =>
  items.reduce<number>((sum, item) => sum + JSON.stringify(item).length, 0);

/**
 * A resource's size in protobuf, from above: each string's UTF-8 bytes, each number as a double, each
 * timestamp and each tag with room for its field tag and lengths. JSON would count every field's name
 * too: about twice the size, which cut pages of 5,000 resources in two after the query had summed all
 * 5,000 (half the database's work thrown away, page after page).
 */
export function resourceBytes(resource: ScanResource): number {
  let bytes = 6; // its own field tag and length in the page

  for (const value of Object.values(resource)) {
    if (typeof value === 'string') bytes += Buffer.byteLength(value) + 6;
    else if (typeof value === 'number') bytes += 10;
    else if (value instanceof Date) bytes += 16;
    else if (value && typeof value === 'object')
      for (const [key, tag] of Object.entries(value as Record<string, string>))
        bytes += Buffer.byteLength(key) + Buffer.byteLength(tag) + 12;
  }
  return bytes;
}

const stringTags = (tags: unknown): Record<string, string> => {
  if (!tags || typeof tags !== 'object' || Array.isArray(tags)) return {};
  return Object.fromEntries(Object.entries(tags as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
};

/**
 * The scanner's view of a team's raw FOCUS rows: per resource sums over the window (the descriptive
 * columns from the costliest row (ties: billed cost, then the first charge description) of the resource's
 * costliest charge period (ties: billed cost, then the latest), its tags from its latest period), daily
 * cost per connection and service, totals per connection and the tag pairs in use. Everything is summed in SQL, so a million
 * rows leave the database as a few thousand resources. Resources come in pages in (connection id,
 * resource id) order (ids in byte order), each ended by count or by size (under the gRPC message limit); every resource of
 * the window is in exactly one page; the aggregates come with the first page. Nothing is cut.
 */
export function scanDataQueries({ db, now = () => new Date() }: { db: Db; now?: () => Date }) {
  /**
   * One query in a transaction of its own, with room to sort and hash a million rows in memory, and
   * `settings` (SET LOCAL) for it alone.
   */
  const query = (sql: string, params: unknown[], settings: readonly string[] = []) =>
    db.transaction(async (tx) => {
      await tx.query(`SET LOCAL work_mem = '${workMem}'`);
      for (const setting of settings) await tx.query(`SET LOCAL ${setting}`);
      return tx.query<Record<string, unknown>>(sql, params);
    });

  async function getScanData(teamId: string, request: ScanDataRequest): Promise<ScanDataResult> {
    const requestedAt = now();
    const days = request.days || defaultDays;
    const maxResources = request.maxResources || defaultMaxResources;
    const problems = [];
    if (days < 1 || days > 400) problems.push({ field: 'days', message: 'must be between 1 and 400' });
    if (maxResources < 1 || maxResources > maxMaxResources)
      problems.push({ field: 'max_resources', message: `must be between 1 and ${maxMaxResources}` });
    if (request.until && !Number.isFinite(request.until.getTime()))
      problems.push({ field: 'until', message: 'must be a valid timestamp' });
    const range = { from: request.range?.from ?? '', to: request.range?.to ?? '' };
    for (const [field, value] of [
      ['resource_id_from', range.from],
      ['resource_id_to', range.to],
      ['after_resource_id', request.after?.resourceId ?? ''],
    ] as const)
      if (value.includes('\0')) problems.push({ field, message: 'must not contain a NUL character' });
    if (range.from && range.to && byteOrder(range.to, range.from) < 0)
      problems.push({ field: 'resource_id_to', message: 'must not be before resource_id_from (byte order)' });
    const splitInto = request.splitInto ?? 0;
    if (!Number.isInteger(splitInto) || splitInto < 0 || splitInto > maxShards)
      problems.push({ field: 'split_into', message: `must be between 0 and ${maxShards}` });
    const parts = request.parts ?? costs.ScanDataParts.UNSPECIFIED;
    if (splitInto > 1 && parts !== costs.ScanDataParts.COUNT && parts !== costs.ScanDataParts.AGGREGATES)
      problems.push({ field: 'split_into', message: 'needs parts COUNT or AGGREGATES' });
    if (splitInto > 1 && parts === costs.ScanDataParts.AGGREGATES && (range.from || range.to))
      problems.push({
        field: 'split_into',
        message:
          'with parts AGGREGATES splits the whole window: leave resource_id_from and resource_id_to empty',
      });
    if (!Object.values(costs.ScanDataParts).includes(parts))
      problems.push({ field: 'parts', message: 'must be one of the ScanDataParts values' });
    const withResources =
      parts === costs.ScanDataParts.UNSPECIFIED ||
      parts === costs.ScanDataParts.RESOURCES ||
      parts === costs.ScanDataParts.PAGES;
    if (!withResources && request.after)
      problems.push({
        field: 'after_resource_id',
        message: 'a page cursor needs parts RESOURCES, PAGES or unspecified',
      });
    if (problems.length > 0) throw new ValidationError(problems);

    // Only the team's connections count; an id of another team's (or of no) connection matches nothing.
    const ids = request.connectionIds.filter((id) => looksLikeId('connection', id));
    const { rows: owned } = await db.query<{ id: string }>(
      'SELECT id FROM connections WHERE team_id = $1 AND id = ANY ($2::text[])',
      [teamId, ids],
    );
    const connectionIds = owned.map((row) => row.id);

    let windowEnd = request.until;
    if (!windowEnd) {
      const { rows } = await db.query<{ last: Date | null }>(
        'SELECT max(charge_period_end) AS last FROM cost_records WHERE connection_id = ANY ($1::text[])',
        [connectionIds],
      );
      windowEnd = rows[0]?.last ? new Date(rows[0].last) : new Date();
    }
    const windowStart = new Date(windowEnd.getTime() - days * dayMs);
    const empty: ScanDataResult = {
      windowStart,
      windowEnd,
      currency: '',
      resources: [],
      hasMore: false,
      totals: [],
      daily: [],
      tagUsage: [],
      commitments: [],
      dataStart: null,
      dataEnd: null,
      resourceCount: 0,
      shardBounds: [],
    };
    if (connectionIds.length === 0) return empty;
    const params = [connectionIds, windowStart.toISOString(), windowEnd.toISOString()];
    const none = Promise.resolve({ rows: [] as Record<string, unknown>[] });
    // The first page carries the aggregates (all of them, or those per-resource rules read with
    // RESOURCES); later pages only resources. COUNT answers the resource count alone, PAGES resources alone.
    const first = !request.after;
    const light = first && parts !== costs.ScanDataParts.COUNT && parts !== costs.ScanDataParts.PAGES;
    const heavy = light && parts !== costs.ScanDataParts.RESOURCES;
    const split = splitInto > 1;
    const aggregate = (sql: string, when = light, settings: readonly string[] = [], more: unknown[] = []) =>
      when ? query(sql, [...params, ...more], settings) : none;
    // A plan's AGGREGATES may ask for its shards' bounds too: from the aggregates' groups, not another
    // pass over the window's rows.
    const boundsWithAggregates = light && parts === costs.ScanDataParts.AGGREGATES && split;

    // COUNT's parameters: the split's count ($4) only when it is asked for, then the range's.
    const countRange = inRange(range, split ? 5 : 4);
    const [resources, count, lightRows, daily] = await Promise.all([
      !withResources
        ? none
        : query(
            // One pass in (connection_id, resource_id COLLATE "C", charge_period_start) order, the order of the
            // cost_records_scan index: the page streams from the index (a merge of its period partitions),
            // each row sees its charge period's sums through a window over that order (no sort: hours are
            // counted once however many SKUs bill them), rows are grouped per resource as they come, and the
            // LIMIT stops the read without the rest of the range. The descriptive columns are those of the
            // costliest row of the resource's costliest charge period, the tags the latest period's: a
            // second window over the resource (the same order, no sort) gives each row the resource's
            // largest ordering key (period effective and billed cost, period start, the row's effective and
            // billed cost: max of a numeric array compares them in that order, as the ORDER BY DESC did), so
            // only the rows that hold it (one, or a tie) build their columns and are sorted by description.
            // Building and sorting every row's 20 columns per resource took 45 % of a page.
            `WITH per_row AS (
           SELECT connection_id, resource_id COLLATE "C" AS resource_id, charge_period_start, charge_period_end,
             billed_cost, effective_cost, list_cost, contracted_cost, pricing_quantity, consumed_quantity,
             resource_name, resource_type, service_name, service_category, region_id, sub_account_id, provider_name,
             sku_id, charge_category, pricing_unit, consumed_unit, charge_description, charge_class, pricing_category,
             commitment_discount_id, commitment_discount_category, commitment_discount_status,
             commitment_discount_type, capacity_reservation_id, capacity_reservation_status, tags,
             sum(effective_cost) OVER period AS period_effective, sum(billed_cost) OVER period AS period_billed,
             max(charge_period_end) OVER period AS period_end, row_number() OVER period AS period_row
           FROM (${scoped} AND resource_id <> '' AND (connection_id, resource_id COLLATE "C") > ($5::text, $6::text)
             ${inRange(range, 7).sql}) scoped
           WINDOW period AS (PARTITION BY connection_id, resource_id COLLATE "C", charge_period_start)
         ), ranked AS (
           SELECT *, max(main_key) OVER resource AS resource_main_key,
             max(charge_period_start) OVER resource AS latest_start
           FROM (SELECT *, ARRAY[period_effective, period_billed, extract(epoch FROM charge_period_start),
               effective_cost, billed_cost] AS main_key FROM per_row) keyed
           WINDOW resource AS (PARTITION BY connection_id, resource_id)
         )
         SELECT connection_id, resource_id, sum(billed_cost)::float8 AS billed, sum(effective_cost)::float8 AS effective,
           sum(list_cost)::float8 AS list, sum(contracted_cost)::float8 AS contracted,
           coalesce(sum(effective_cost) FILTER (WHERE commitment_discount_status = 'Unused'), 0)::float8 AS unused_commitment,
           coalesce(sum(effective_cost) FILTER (WHERE capacity_reservation_status = 'Unused'), 0)::float8 AS unused_reservation,
           coalesce(sum(effective_cost) FILTER (WHERE charge_description ILIKE '%extended support%'), 0)::float8 AS extended_support,
           coalesce(sum(pricing_quantity), 0)::float8 AS pricing_quantity,
           coalesce(sum(consumed_quantity), 0)::float8 AS consumed_quantity,
           count(DISTINCT (charge_period_start AT TIME ZONE 'UTC')::date)::int AS days_seen,
           round(sum(extract(epoch FROM (period_end - charge_period_start))) FILTER (WHERE period_row = 1) / 3600)::int AS hours_seen,
           min(charge_period_start) AS first_seen, max(charge_period_end) AS last_seen,
           (array_agg(jsonb_build_array(resource_name, resource_type, service_name, service_category, region_id,
             sub_account_id, provider_name, sku_id, charge_category, pricing_unit, consumed_unit,
             charge_description, charge_class, pricing_category, commitment_discount_id,
             commitment_discount_category, commitment_discount_status, commitment_discount_type,
             capacity_reservation_id, capacity_reservation_status)
             ORDER BY charge_description COLLATE "C" NULLS LAST) FILTER (WHERE main_key = resource_main_key))[1] AS main,
           (array_agg(tags::text ORDER BY tags::text NULLS LAST) FILTER (WHERE charge_period_start = latest_start))[1] AS tags
         FROM ranked GROUP BY connection_id, resource_id
         ORDER BY connection_id, resource_id LIMIT $4`,
            [
              ...params,
              maxResources + 1,
              request.after?.connectionId ?? '',
              request.after?.resourceId ?? '',
              ...inRange(range, 7).params,
            ],
            indexOrder,
          ),
      // The range's resources counted, and with a split its shards' bounds from the same pass.
      parts === costs.ScanDataParts.COUNT
        ? query(
            `WITH pairs AS MATERIALIZED (SELECT DISTINCT connection_id, resource_id COLLATE "C" AS resource_id
               FROM (${scoped} AND resource_id <> ''${countRange.sql}) scoped)
             SELECT (SELECT count(*)::int FROM pairs) AS count${
               split
                 ? `, ${shardBoundsOf('SELECT DISTINCT resource_id FROM pairs', '$4::int')} AS bounds`
                 : ''
             }`,
            [...params, ...(split ? [splitInto] : []), ...countRange.params],
          )
        : none,
      aggregate(
        // The light aggregates in one pass over the window: per resource, currency, commitment and tag set
        // first (hashed: about as many groups as resources), then the totals per connection, the currency,
        // the named commitments, the data's span, the resource count and (with every aggregate) the tag
        // pairs in use, each from those groups: a tag set is taken apart once, not once per row. About 1.3 KB
        // a group in each process (numeric sums): 128MB hashes some 100,000 resources a process (always
        // hashed, see hashGroups), and more spill to disk in batches. A hash may take
        // twice work_mem (hash_mem_multiplier) in the query's process and each of its parallel workers (two
        // by default): up to about 768MB for one plan of a very large estate.
        `WITH per_resource AS MATERIALIZED (
           SELECT connection_id, resource_id, billing_currency, commitment_discount_id, tags,
             sum(effective_cost) AS effective, sum(abs(effective_cost)) AS magnitude,
             coalesce(sum(effective_cost) FILTER (WHERE ${untaggableCategory}), 0) AS untaggable_category,
             coalesce(sum(effective_cost) FILTER (WHERE NOT ${untaggableCategory} AND coalesce(resource_id, '') <> ''
               AND (tags IS NULL OR tags = '{}'::jsonb)), 0) AS untagged,
             coalesce(sum(effective_cost) FILTER (WHERE NOT ${untaggableCategory} AND coalesce(resource_id, '') = ''), 0) AS unattributed,
             count(*) AS records,
             count(*) FILTER (WHERE commitment_discount_status = 'Unused') AS unused_commitment_records,
             max(charge_period_end) FILTER (WHERE ${usageBased}) AS usage_end,
             max(commitment_discount_type) AS commitment_discount_type,
             coalesce(sum(effective_cost) FILTER (WHERE commitment_discount_status = 'Used'), 0) AS used,
             coalesce(sum(effective_cost) FILTER (WHERE commitment_discount_status = 'Unused'), 0) AS unused,
             min(charge_period_start) AS first_seen, max(charge_period_end) AS last_seen
           FROM (${scoped}) scoped GROUP BY connection_id, resource_id, billing_currency, commitment_discount_id, tags
         )
         SELECT
           (SELECT json_agg(t ORDER BY t.connection_id) FROM (
              SELECT connection_id, sum(effective)::float8 AS effective,
                sum(untaggable_category)::float8 AS untaggable_category, sum(untagged)::float8 AS untagged,
                sum(unattributed)::float8 AS unattributed, count(DISTINCT resource_id)::int AS resources,
                sum(records)::bigint AS records, sum(unused_commitment_records)::bigint AS unused_commitment_records,
                max(usage_end) AS usage_end
              FROM per_resource GROUP BY connection_id) t) AS totals,
           (SELECT billing_currency FROM per_resource GROUP BY billing_currency
              ORDER BY sum(magnitude) DESC, billing_currency LIMIT 1) AS currency,
           (SELECT json_agg(c ORDER BY c.connection_id, c.commitment_discount_id) FROM (
              SELECT connection_id, commitment_discount_id, max(commitment_discount_type) AS commitment_discount_type,
                sum(used)::float8 AS used, sum(unused)::float8 AS unused,
                min(first_seen) AS first_seen, max(last_seen) AS last_seen
              FROM per_resource WHERE coalesce(commitment_discount_id, '') <> ''
              GROUP BY connection_id, commitment_discount_id ORDER BY 1, 2 LIMIT ${maxCommitments}) c) AS commitments,
           (SELECT min(first_seen) FROM per_resource) AS first,
           (SELECT max(last_seen) FROM per_resource) AS last,
           (SELECT count(*)::int FROM (SELECT DISTINCT connection_id, resource_id FROM per_resource
              WHERE resource_id <> '') pairs) AS pairs
           ${
             boundsWithAggregates
               ? `, ${shardBoundsOf(`SELECT DISTINCT resource_id COLLATE "C" AS resource_id FROM per_resource WHERE resource_id <> ''`, '$4::int')} AS bounds`
               : ''
           }
           ${
             heavy
               ? `, (SELECT json_agg(u ORDER BY u.effective DESC, u.key, u.value) FROM (
                    SELECT t.key, t.value, count(DISTINCT p.resource_id)::int AS resources,
                      sum(p.effective)::float8 AS effective
                    FROM per_resource p, jsonb_each_text(p.tags) AS t (key, value)
                    WHERE jsonb_typeof(p.tags) = 'object'
                    GROUP BY t.key, t.value ORDER BY effective DESC, t.key, t.value LIMIT ${maxTagPairs}) u) AS tag_usage`
               : ''
           }`,
        light,
        ["work_mem = '128MB'", ...hashGroups],
        boundsWithAggregates ? [splitInto] : [],
      ),
      aggregate(
        `SELECT connection_id, to_char((charge_period_start AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day,
           coalesce(service_name, '') AS service_name, coalesce(service_category, '') AS service_category,
           sum(effective_cost)::float8 AS effective,
           coalesce(sum(effective_cost) FILTER (WHERE ${dataTransfer}), 0)::float8 AS data_transfer,
           coalesce(sum(effective_cost) FILTER (WHERE ${usageBased}), 0)::float8 AS usage
         FROM (${scoped}) scoped GROUP BY 1, 2, 3, 4`,
        heavy,
        hashGroups,
      ),
    ]);

    // The light aggregates' one row, as the lists and values the answer is made of.
    const lightRow = lightRows.rows[0];
    const listOf = (value: unknown) => (Array.isArray(value) ? (value as Record<string, unknown>[]) : []);
    const totals = { rows: listOf(lightRow?.totals) };
    const tagUsage = { rows: listOf(lightRow?.tag_usage) };
    const commitments = { rows: listOf(lightRow?.commitments) };
    const currency = { rows: lightRow?.currency ? [{ currency: lightRow.currency }] : [] };
    const span = { rows: lightRow ? [{ first: lightRow.first, last: lightRow.last }] : [] };
    const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
    const num = (value: unknown) => (value === null || value === undefined ? 0 : Number(value));
    const nullableNum = (value: unknown) => (value === null || value === undefined ? null : Number(value));
    const mainOf = (row: Record<string, unknown>) => (Array.isArray(row.main) ? (row.main as unknown[]) : []);
    const allResources: ScanResource[] = resources.rows.slice(0, maxResources).map((row) => {
      const [
        name,
        type,
        service,
        category,
        region,
        subAccount,
        provider,
        sku,
        charge,
        pricingUnit,
        consumedUnit,
        chargeDescription,
        chargeClass,
        pricingCategory,
        commitmentDiscountId,
        commitmentDiscountCategory,
        commitmentDiscountStatus,
        commitmentDiscountType,
        capacityReservationId,
        capacityReservationStatus,
      ] = mainOf(row);
      return {
        connectionId: text(row.connection_id),
        resourceId: text(row.resource_id),
        resourceName: text(name),
        resourceType: text(type),
        serviceName: text(service),
        serviceCategory: text(category),
        regionId: text(region),
        subAccountId: text(subAccount),
        providerName: text(provider),
        skuId: text(sku),
        chargeCategory: text(charge),
        pricingUnit: text(pricingUnit),
        consumedUnit: text(consumedUnit),
        pricingQuantity: num(row.pricing_quantity),
        consumedQuantity: num(row.consumed_quantity),
        tags: stringTags(typeof row.tags === 'string' ? JSON.parse(row.tags) : row.tags),
        billedCost: num(row.billed),
        effectiveCost: num(row.effective),
        listCost: nullableNum(row.list),
        contractedCost: nullableNum(row.contracted),
        chargeDescription: text(chargeDescription),
        chargeClass: text(chargeClass),
        pricingCategory: text(pricingCategory),
        commitmentDiscountId: text(commitmentDiscountId),
        commitmentDiscountCategory: text(commitmentDiscountCategory),
        commitmentDiscountStatus: text(commitmentDiscountStatus),
        commitmentDiscountType: text(commitmentDiscountType),
        capacityReservationId: text(capacityReservationId),
        capacityReservationStatus: text(capacityReservationStatus),
        unusedCommitmentCost: num(row.unused_commitment),
        unusedCapacityReservationCost: num(row.unused_reservation),
        extendedSupportCost: num(row.extended_support),
        daysSeen: num(row.days_seen),
        hoursSeen: num(row.hours_seen),
        firstSeen: new Date(row.first_seen as string),
        lastSeen: new Date(row.last_seen as string),
      };
    });
    // Oldest day first, then by connection, service and category (byte order; sorted here: with an ORDER BY
    // the planner sorts the window's rows rather than hash them, see hashGroups). One key of the parts
    // joined by NUL (which no text holds) orders as the parts one after the other.
    const dailyRows = daily.rows
      .map((row) => ({
        connectionId: text(row.connection_id),
        day: text(row.day),
        serviceName: text(row.service_name),
        serviceCategory: text(row.service_category),
        effectiveCost: num(row.effective),
        dataTransferCost: num(row.data_transfer),
        usageCost: num(row.usage),
      }))
      .map((row) => ({
        row,
        key: Buffer.from([row.day, row.connectionId, row.serviceName, row.serviceCategory].join('\0')),
      }))
      .sort((a, b) => Buffer.compare(a.key, b.key))
      .map(({ row }) => row);
    const tagRows = tagUsage.rows.map((row) => ({
      key: text(row.key),
      value: text(row.value),
      resources: num(row.resources),
      effectiveCost: num(row.effective),
    }));
    // A split's bounds: COUNT's, or those the aggregates' pass numbered.
    const boundList = count.rows[0]?.bounds ?? lightRow?.bounds;
    const shardBounds = Array.isArray(boundList) ? (boundList as unknown[]).map(text) : [];
    // The aggregates (first page only) and bounds are never cut: if they alone outgrow a page the scan
    // fails with this error rather than judging a part of the data.
    const aggregateBytes =
      jsonBytes(dailyRows) +
      jsonBytes(tagRows) +
      jsonBytes(totals.rows) +
      jsonBytes(commitments.rows) +
      jsonBytes(shardBounds);
    if (aggregateBytes > pageBytes)
      throw new BadRequestError(
        `the scan's daily series, tag usage and shard bounds (${aggregateBytes} bytes) outgrow one message; scan fewer connections, a shorter window or in fewer shards`,
      );
    // The page: up to maxResources resources in key order, ended early before its size nears the limit.
    let used = aggregateBytes;
    let kept = 0;
    while (kept < allResources.length) {
      used += resourceBytes(allResources[kept]!);
      if (used > pageBytes && kept > 0) break;
      kept++;
    }
    const hasMore = kept < allResources.length || resources.rows.length > maxResources;
    return {
      windowStart,
      windowEnd,
      currency: text(currency.rows[0]?.currency),
      resources: allResources.slice(0, kept),
      hasMore,
      totals: totals.rows.map((row) => ({
        connectionId: text(row.connection_id),
        effectiveCost: num(row.effective),
        untaggedCost: num(row.untagged),
        unattributedCost: num(row.unattributed),
        untaggableCategoryCost: num(row.untaggable_category),
        resources: num(row.resources),
        records: BigInt(text(row.records) || '0'),
        unusedCommitmentRecords: BigInt(text(row.unused_commitment_records) || '0'),
        // Capped at now: a row dated in the future does not move where the data ends.
        dataEnd: row.usage_end
          ? new Date(Math.min(new Date(row.usage_end as string).getTime(), requestedAt.getTime()))
          : null,
      })),
      daily: dailyRows,
      tagUsage: tagRows,
      commitments: commitments.rows.map((row) => ({
        connectionId: text(row.connection_id),
        commitmentDiscountId: text(row.commitment_discount_id),
        commitmentDiscountType: text(row.commitment_discount_type),
        usedCost: num(row.used),
        unusedCost: num(row.unused),
        firstSeen: new Date(row.first_seen as string),
        lastSeen: new Date(row.last_seen as string),
      })),
      dataStart: span.rows[0]?.first ? new Date(span.rows[0].first as string) : null,
      dataEnd: span.rows[0]?.last ? new Date(span.rows[0].last as string) : null,
      // COUNT's, else (with the aggregates) the light aggregates' own count of the window's resources.
      resourceCount: Number(count.rows[0]?.count ?? lightRow?.pairs ?? 0),
      shardBounds,
    };
  }

  return { getScanData };
}

export type ScanDataQueries = ReturnType<typeof scanDataQueries>;
