import type { Queryable } from '@costgov/db';
import { ValidationError } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';

const dayMs = 86_400_000;
const defaultDays = 62;
const defaultMaxResources = 5000;
/** Beyond this the answer outgrows a gRPC message (4 MB). */
const maxMaxResources = 10_000;
const maxTagPairs = 2000;

export interface ScanDataRequest {
  connectionIds: string[];
  until?: Date;
  days?: number;
  maxResources?: number;
}

export interface ScanResourceRow {
  connectionId: string;
  resourceId: string;
  resourceName: string;
  resourceType: string;
  serviceName: string;
  serviceCategory: string;
  regionId: string;
  subAccountId: string;
  providerName: string;
  skuId: string;
  chargeCategory: string;
  pricingUnit: string;
  consumedUnit: string;
  pricingQuantity: number;
  consumedQuantity: number;
  tags: Record<string, string>;
  billedCost: number;
  effectiveCost: number;
  listCost: number | null;
  contractedCost: number | null;
  daysSeen: number;
  hoursSeen: number;
  firstSeen: Date;
  lastSeen: Date;
}

export interface ScanDataResult {
  windowStart: Date;
  windowEnd: Date;
  currency: string;
  resources: ScanResourceRow[];
  truncated: boolean;
  totals: {
    connectionId: string;
    effectiveCost: number;
    untaggedCost: number;
    unattributedCost: number;
    resources: number;
    records: bigint;
  }[];
  daily: {
    connectionId: string;
    day: string;
    serviceName: string;
    serviceCategory: string;
    effectiveCost: number;
    dataTransferCost: number;
  }[];
  tagUsage: { key: string; value: string; resources: number; effectiveCost: number }[];
}

// Rows of the window: the billing-period bounds let the (connection_id, billing_period_start) index narrow
// the scan. A month either side: a charge period may lie outside its billing period (the sample has an
// Oracle row charged 30 September in the period starting 1 October).
const scoped = `SELECT * FROM cost_records WHERE connection_id = ANY ($1::text[])
  AND billing_period_start >= ($2::timestamptz - interval '32 days')::date AND billing_period_start < ($3::timestamptz + interval '32 days')::date
  AND charge_period_start >= $2::timestamptz AND charge_period_start < $3::timestamptz`;

// Data transfer: usage priced per GB (storage is priced per GB-month), log ingestion aside.
const dataTransfer = `charge_category = 'Usage' AND lower(coalesce(pricing_unit, consumed_unit, '')) IN ('gb', 'gib')
  AND coalesce(service_category, '') <> 'Management and Governance'`;

const stringTags = (tags: unknown): Record<string, string> => {
  if (!tags || typeof tags !== 'object' || Array.isArray(tags)) return {};
  return Object.fromEntries(Object.entries(tags as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
};

/**
 * The scanner's view of a team's raw FOCUS rows: per resource sums over the window (the descriptive
 * columns from the resource's costliest row, its tags from its latest), daily cost per connection and
 * service, totals per connection and the tag pairs in use. Everything is summed in SQL, so a million
 * rows leave the database as a few thousand resources.
 */
export function scanDataQueries({ db }: { db: Queryable }) {
  async function getScanData(teamId: string, request: ScanDataRequest): Promise<ScanDataResult> {
    const days = request.days || defaultDays;
    const maxResources = request.maxResources || defaultMaxResources;
    const problems = [];
    if (days < 1 || days > 400) problems.push({ field: 'days', message: 'must be between 1 and 400' });
    if (maxResources < 1 || maxResources > maxMaxResources)
      problems.push({ field: 'max_resources', message: `must be between 1 and ${maxMaxResources}` });
    if (request.until && !Number.isFinite(request.until.getTime()))
      problems.push({ field: 'until', message: 'must be a valid timestamp' });
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
      truncated: false,
      totals: [],
      daily: [],
      tagUsage: [],
    };
    if (connectionIds.length === 0) return empty;
    const params = [connectionIds, windowStart.toISOString(), windowEnd.toISOString()];

    const [resources, totals, daily, tagUsage, currency] = await Promise.all([
      db.query<Record<string, unknown>>(
        `WITH scoped AS (${scoped} AND coalesce(resource_id, '') <> ''),
         sums AS (
           SELECT connection_id, resource_id, sum(billed_cost)::float8 AS billed, sum(effective_cost)::float8 AS effective,
             sum(list_cost)::float8 AS list, sum(contracted_cost)::float8 AS contracted,
             coalesce(sum(pricing_quantity), 0)::float8 AS pricing_quantity,
             coalesce(sum(consumed_quantity), 0)::float8 AS consumed_quantity,
             count(DISTINCT (charge_period_start AT TIME ZONE 'UTC')::date)::int AS days_seen,
             min(charge_period_start) AS first_seen, max(charge_period_end) AS last_seen
           FROM scoped GROUP BY connection_id, resource_id
           ORDER BY effective DESC, connection_id, resource_id LIMIT $4
         ),
         main AS (
           SELECT DISTINCT ON (connection_id, resource_id) connection_id, resource_id, resource_name, resource_type,
             service_name, service_category, region_id, sub_account_id, provider_name, sku_id, charge_category,
             pricing_unit, consumed_unit
           FROM scoped WHERE (connection_id, resource_id) IN (SELECT connection_id, resource_id FROM sums)
           ORDER BY connection_id, resource_id, effective_cost DESC
         ),
         latest AS (
           SELECT DISTINCT ON (connection_id, resource_id) connection_id, resource_id, tags
           FROM scoped WHERE (connection_id, resource_id) IN (SELECT connection_id, resource_id FROM sums)
           ORDER BY connection_id, resource_id, charge_period_start DESC
         ),
         periods AS (
           SELECT connection_id, resource_id, charge_period_start, max(charge_period_end) AS charge_period_end
           FROM scoped WHERE (connection_id, resource_id) IN (SELECT connection_id, resource_id FROM sums)
           GROUP BY connection_id, resource_id, charge_period_start
         ),
         hours AS (
           SELECT connection_id, resource_id,
             round(sum(extract(epoch FROM (charge_period_end - charge_period_start))) / 3600)::int AS hours_seen
           FROM periods GROUP BY connection_id, resource_id
         )
         SELECT s.*, m.resource_name, m.resource_type, m.service_name, m.service_category, m.region_id,
           m.sub_account_id, m.provider_name, m.sku_id, m.charge_category, m.pricing_unit, m.consumed_unit,
           l.tags, h.hours_seen
         FROM sums s
         JOIN main m USING (connection_id, resource_id)
         JOIN latest l USING (connection_id, resource_id)
         JOIN hours h USING (connection_id, resource_id)
         ORDER BY s.effective DESC, s.connection_id, s.resource_id`,
        [...params, maxResources + 1],
      ),
      db.query<Record<string, unknown>>(
        `SELECT connection_id, sum(effective_cost)::float8 AS effective,
           coalesce(sum(effective_cost) FILTER (WHERE tags IS NULL OR tags = '{}'::jsonb), 0)::float8 AS untagged,
           coalesce(sum(effective_cost) FILTER (WHERE coalesce(resource_id, '') = ''), 0)::float8 AS unattributed,
           count(DISTINCT resource_id)::int AS resources, count(*)::bigint AS records
         FROM (${scoped}) scoped GROUP BY connection_id ORDER BY connection_id`,
        params,
      ),
      db.query<Record<string, unknown>>(
        `SELECT connection_id, to_char((charge_period_start AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day,
           coalesce(service_name, '') AS service_name, coalesce(service_category, '') AS service_category,
           sum(effective_cost)::float8 AS effective,
           coalesce(sum(effective_cost) FILTER (WHERE ${dataTransfer}), 0)::float8 AS data_transfer
         FROM (${scoped}) scoped GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
        params,
      ),
      db.query<Record<string, unknown>>(
        `SELECT t.key, t.value, count(DISTINCT scoped.resource_id)::int AS resources,
           sum(scoped.effective_cost)::float8 AS effective
         FROM (${scoped} AND jsonb_typeof(tags) = 'object') scoped, jsonb_each_text(scoped.tags) AS t (key, value)
         GROUP BY t.key, t.value ORDER BY effective DESC, t.key, t.value LIMIT ${maxTagPairs}`,
        params,
      ),
      db.query<{ currency: string }>(
        `SELECT billing_currency AS currency FROM (${scoped}) scoped
         GROUP BY billing_currency ORDER BY sum(abs(effective_cost)) DESC, billing_currency LIMIT 1`,
        params,
      ),
    ]);

    const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
    const num = (value: unknown) => (value === null || value === undefined ? 0 : Number(value));
    const nullableNum = (value: unknown) => (value === null || value === undefined ? null : Number(value));
    const truncated = resources.rows.length > maxResources;
    return {
      windowStart,
      windowEnd,
      currency: currency.rows[0]?.currency ?? '',
      truncated,
      resources: resources.rows.slice(0, maxResources).map((row) => ({
        connectionId: text(row.connection_id),
        resourceId: text(row.resource_id),
        resourceName: text(row.resource_name),
        resourceType: text(row.resource_type),
        serviceName: text(row.service_name),
        serviceCategory: text(row.service_category),
        regionId: text(row.region_id),
        subAccountId: text(row.sub_account_id),
        providerName: text(row.provider_name),
        skuId: text(row.sku_id),
        chargeCategory: text(row.charge_category),
        pricingUnit: text(row.pricing_unit),
        consumedUnit: text(row.consumed_unit),
        pricingQuantity: num(row.pricing_quantity),
        consumedQuantity: num(row.consumed_quantity),
        tags: stringTags(row.tags),
        billedCost: num(row.billed),
        effectiveCost: num(row.effective),
        listCost: nullableNum(row.list),
        contractedCost: nullableNum(row.contracted),
        daysSeen: num(row.days_seen),
        hoursSeen: num(row.hours_seen),
        firstSeen: new Date(row.first_seen as string),
        lastSeen: new Date(row.last_seen as string),
      })),
      totals: totals.rows.map((row) => ({
        connectionId: text(row.connection_id),
        effectiveCost: num(row.effective),
        untaggedCost: num(row.untagged),
        unattributedCost: num(row.unattributed),
        resources: num(row.resources),
        records: BigInt(text(row.records) || '0'),
      })),
      daily: daily.rows.map((row) => ({
        connectionId: text(row.connection_id),
        day: text(row.day),
        serviceName: text(row.service_name),
        serviceCategory: text(row.service_category),
        effectiveCost: num(row.effective),
        dataTransferCost: num(row.data_transfer),
      })),
      tagUsage: tagUsage.rows.map((row) => ({
        key: text(row.key),
        value: text(row.value),
        resources: num(row.resources),
        effectiveCost: num(row.effective),
      })),
    };
  }

  return { getScanData };
}

export type ScanDataQueries = ReturnType<typeof scanDataQueries>;
