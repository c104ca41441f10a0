import type { Queryable } from '@costgov/db';
import { filterToSql, parseFilter, type AttributeSpec } from './filter';

export interface ListInput {
  filter?: string;
  /** 1-based; values below 1 are read as 1 (RFC 7644 section 3.4.2.4). */
  startIndex?: number;
  /** Values above 100 are clamped to 100, below 0 to 0; 0 returns only the total. */
  count?: number;
}

export const defaultCount = 25;
export const maxCount = 100;

export interface ListPage {
  totalResults: number;
  startIndex: number;
  itemsPerPage: number;
  Resources: Array<Record<string, unknown>>;
}

/**
 * One page of a team's resources in `table`, narrowed by the SCIM filter (parsed against `attributes`),
 * in a stable order (by creation), with the total count.
 */
export async function listPage<Row>(
  db: Queryable,
  input: ListInput,
  source: {
    table: 'scim_users' | 'scim_groups';
    attributes: Readonly<Record<string, AttributeSpec>>;
    teamId: string;
    /** SQL true for the rows SCIM sees (users deleted over SCIM are kept but not seen). */
    visible?: string;
  },
  render: (rows: Row[]) => Promise<Array<Record<string, unknown>>>,
): Promise<ListPage> {
  const where = ['team_id = $1', ...(source.visible ? [source.visible] : [])];
  const params: unknown[] = [source.teamId];
  if (input.filter) {
    const sql = filterToSql(parseFilter(input.filter, source.attributes), source.attributes, 2);
    where.push(sql.sql);
    params.push(...sql.params);
  }
  const from = `FROM ${source.table} WHERE ${where.join(' AND ')}`;
  const startIndex = Math.max(1, Math.trunc(input.startIndex ?? 1) || 1);
  const count = Math.min(maxCount, Math.max(0, Math.trunc(input.count ?? defaultCount)));
  const rows =
    count === 0
      ? []
      : (
          await db.query<Row>(
            `SELECT * ${from} ORDER BY created_at, id LIMIT ${count} OFFSET ${startIndex - 1}`,
            params,
          )
        ).rows;
  // A page that is not full is the last one, so the total follows from it without counting: an identity
  // provider's `userName eq` lookup, its commonest request, is one statement instead of two.
  const totalResults =
    rows.length > 0 && rows.length < count
      ? startIndex - 1 + rows.length
      : rows.length === 0 && count > 0 && startIndex === 1
        ? 0
        : (await db.query<{ n: number }>(`SELECT count(*)::int AS n ${from}`, params)).rows[0]!.n;
  const resources = await render(rows);
  return { totalResults, startIndex, itemsPerPage: resources.length, Resources: resources };
}
