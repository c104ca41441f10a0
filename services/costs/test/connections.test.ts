import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEvent, type Bus, type CloudEvent } from '@costgov/bus';
import { costs, events } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { BadRequestError, ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { eventually } from '@costgov/testing';
import { spendQueries } from '../src/spend/spend';
import { startCosts, type CostsUnderTest } from './fixture';

const asA = { teamId: newId('team') };
const asB = { teamId: newId('team') };

let costsService: CostsUnderTest;
let db: Db;
let spend: ReturnType<typeof spendQueries>;
let client: RpcClient<typeof costs.ConnectionsService>;
let bus: Bus;
const received: CloudEvent[] = [];

beforeAll(async () => {
  costsService = await startCosts();
  ({ db, bus } = costsService);
  client = costsService.clients.connections;
  spend = spendQueries({ db });
  await bus.consume({
    durable: 'costs_connections_test_observer',
    types: ['costs.connection.>'],
    handler: async (event) => {
      received.push(event);
    },
  });
});

afterAll(() => costsService?.stop());

const eventsFor = (id: string) => received.filter((event) => event.subject === id);
const eventTypesFor = (id: string) => eventsFor(id).map((event) => event.type);

/** Cost data of a connection as an upload leaves it: raw rows, their rollups, and the upload's record. */
async function addCostRows(teamId: string, connectionId: string, count: number) {
  const uploadId = newId('event');
  await db.query(
    `INSERT INTO cost_uploads (id, team_id, connection_id, status, staging_table) VALUES ($1, $2, $3, 'stored', '-')`,
    [uploadId, teamId, connectionId],
  );
  // Raw rows go into a partition of their connection and period (migration 0006).
  await db.query(`SELECT cost_records_partition($1, '2026-03-01')`, [connectionId]);
  for (let i = 0; i < count; i++) {
    await db.query(
      `INSERT INTO cost_records (connection_id, upload_id, billing_period_start, billing_period_end,
         charge_period_start, charge_period_end, billed_cost, effective_cost, billing_currency)
       VALUES ($1, $2, '2026-03-01', '2026-04-01', '2026-03-01'::date + $3::int, '2026-03-01'::date + $3::int + 1,
         1, 1, 'USD')`,
      [connectionId, uploadId, i],
    );
    await db.query(
      `INSERT INTO daily_spend (team_id, connection_id, day, billing_period_start, billing_currency, tags,
         tags_hash, billed_cost, effective_cost, records)
       VALUES ($1, $2, '2026-03-01'::date + $3::int, '2026-03-01', 'USD', '{}', md5('{}'), 1, 1, 1)`,
      [teamId, connectionId, i],
    );
  }
}

/** Rows of a connection's cost data in each table that holds it. */
const costRowsOf = async (connectionId: string) => {
  const counts = [];
  for (const table of ['cost_records', 'daily_spend', 'cost_uploads']) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} WHERE connection_id = $1`,
      [connectionId],
    );
    counts.push(rows[0]!.n);
  }
  return counts;
};

describe(`connections service (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${process.env.NATS_URL ? 'nats' : 'in-process bus'})`, () => {
  it('creates a connection and publishes costs.connection.created', async () => {
    const connection = await client.createConnection({ name: '  prod-aws  ', provider: 'aws' }, asA);
    expect(connection.id).toMatch(/^con_/);
    expect(connection).toMatchObject({ name: 'prod-aws', provider: 'aws', status: 'active' });
    expect(connection.lastIngestedAt).toBeUndefined();
    expect(connection.createdAt).toEqual(connection.updatedAt);
    const [event] = await eventually(() =>
      eventsFor(connection.id).length ? eventsFor(connection.id) : undefined,
    );
    expect(event!.type).toBe('costs.connection.created');
    expect(decodeEvent(events.ConnectionChangedSchema, event!)).toMatchObject({
      connectionId: connection.id,
      teamId: asA.teamId,
      name: 'prod-aws',
      provider: 'aws',
      status: 'active',
    });
    expect(await client.getConnection({ id: connection.id }, asA)).toEqual(connection);
  });

  it('refuses a duplicate name in the team regardless of case (409), and allows it in another team', async () => {
    await client.createConnection({ name: 'Billing Account', provider: 'gcp' }, asA);
    const error = await client
      .createConnection({ name: 'billing account', provider: 'azure' }, asA)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).details).toEqual([{ field: 'name', message: 'is taken' }]);
    await expect(
      client.createConnection({ name: 'billing account', provider: 'gcp' }, asB),
    ).resolves.toMatchObject({
      name: 'billing account',
    });
  });

  it.each([
    ['a blank name', { name: '   ', provider: 'aws' }, ['name']],
    ['a name of 201 characters', { name: '\u{1F600}'.repeat(201), provider: 'aws' }, ['name']],
    ['a NUL in the name', { name: 'a\u0000b', provider: 'aws' }, ['name']],
    ['an unknown provider', { name: 'ok', provider: 'ibm' }, ['provider']],
    ['both at once', { name: '', provider: '' }, ['name', 'provider']],
  ])('refuses %s with every field violation and stores nothing', async (_case, request, fields) => {
    const before = (await client.listConnections({}, asA)).meta!.totalCount;
    const error = await client.createConnection(request, asA).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((d) => d.field)).toEqual(fields);
    expect((await client.listConnections({}, asA)).meta!.totalCount).toBe(before);
  });

  it('accepts a name of 200 emoji and keeps it whole', async () => {
    const name = '\u{1F680}'.repeat(200);
    expect((await client.createConnection({ name, provider: 'oci' }, asA)).name).toBe(name);
  });

  it('lists newest first with provider and status filters and page arithmetic', async () => {
    const team = { teamId: newId('team') };
    const made = [];
    for (let i = 0; i < 7; i++)
      made.push(await client.createConnection({ name: `c${i}`, provider: i % 2 ? 'azure' : 'aws' }, team));
    await client.updateConnection({ id: made[0]!.id, status: 'disabled' }, team);

    const all = await client.listConnections({ page: { page: 1, perPage: 3 } }, team);
    expect(all.connections.map((c) => c.name)).toEqual(['c6', 'c5', 'c4']);
    expect(all.meta).toMatchObject({ currentPage: 1, perPage: 3, totalPages: 3, totalCount: 7 });
    const last = await client.listConnections({ page: { page: 3, perPage: 3 } }, team);
    expect(last.connections.map((c) => c.name)).toEqual(['c0']);
    const past = await client.listConnections({ page: { page: 4, perPage: 3 } }, team);
    expect(past.connections).toEqual([]);
    expect(past.meta).toMatchObject({ currentPage: 4, totalPages: 3, totalCount: 7 });

    const azure = await client.listConnections({ provider: 'azure' }, team);
    expect(azure.connections.map((c) => c.name)).toEqual(['c5', 'c3', 'c1']);
    const disabledAws = await client.listConnections({ provider: 'aws', status: 'disabled' }, team);
    expect(disabledAws.connections.map((c) => c.name)).toEqual(['c0']);
    expect(disabledAws.meta!.totalCount).toBe(1);
  });

  it.each([
    ['an unknown provider filter', { provider: 'ibm' }],
    ['an unknown status filter', { status: 'paused' }],
    ['per_page 101', { page: { page: 1, perPage: 101 } }],
    ['a negative page', { page: { page: -1, perPage: 10 } }],
  ])('refuses %s with 400', async (_case, request) => {
    await expect(client.listConnections(request, asA)).rejects.toBeInstanceOf(BadRequestError);
  });

  it('updates name and status, publishes costs.connection.updated, and changes nothing on a no-op', async () => {
    const created = await client.createConnection({ name: 'to-update', provider: 'other' }, asA);
    const updated = await client.updateConnection(
      { id: created.id, name: 'renamed', status: 'disabled' },
      asA,
    );
    expect(updated).toMatchObject({ id: created.id, name: 'renamed', status: 'disabled', provider: 'other' });
    expect(await client.getConnection({ id: created.id }, asA)).toEqual(updated);
    await eventually(() =>
      eventTypesFor(created.id).includes('costs.connection.updated') ? true : undefined,
    );
    const same = await client.updateConnection({ id: created.id, name: 'renamed' }, asA);
    expect(same).toEqual(updated);
    // One update event only: the no-op published none (the created one comes first).
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(eventTypesFor(created.id)).toEqual(['costs.connection.created', 'costs.connection.updated']);
  });

  it('refuses a bad status or a taken name on update and leaves the connection as it was', async () => {
    const first = await client.createConnection({ name: 'first', provider: 'aws' }, asA);
    const second = await client.createConnection({ name: 'second', provider: 'aws' }, asA);
    await expect(client.updateConnection({ id: second.id, status: 'paused' }, asA)).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(client.updateConnection({ id: second.id, name: 'FIRST' }, asA)).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await client.getConnection({ id: second.id }, asA)).toEqual(second);
    expect(first.name).toBe('first');
  });

  it("answers 404 for another team's connection on every operation, and for ids of another shape", async () => {
    const theirs = await client.createConnection({ name: 'theirs', provider: 'aws' }, asB);
    await addCostRows(asB.teamId, theirs.id, 2);
    await expect(client.getConnection({ id: theirs.id }, asA)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.updateConnection({ id: theirs.id, name: 'mine' }, asA)).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(client.deleteConnection({ id: theirs.id }, asA)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.getConnection({ id: 'con_nope' }, asA)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.getConnection({ id: newId('project') }, asA)).rejects.toBeInstanceOf(NotFoundError);
    expect(await client.getConnection({ id: theirs.id }, asB)).toEqual(theirs);
    expect(await costRowsOf(theirs.id)).toEqual([2, 2, 1]);
    const listed = await client.listConnections({ page: { page: 1, perPage: 100 } }, asA);
    expect(listed.connections.map((c) => c.id)).not.toContain(theirs.id);
  });

  it('deletes the connection: its spend stops counting at once, its cost data is purged after costs.connection.deleted', async () => {
    const doomed = await client.createConnection({ name: 'doomed', provider: 'azure' }, asA);
    const kept = await client.createConnection({ name: 'kept', provider: 'azure' }, asA);
    await addCostRows(asA.teamId, doomed.id, 3);
    await addCostRows(asA.teamId, kept.id, 2);
    const spendOf = async (ids: string[]) =>
      (
        await spend.getSpend(asA.teamId, {
          connectionIds: ids,
          tags: {},
          from: timestampFromDate(new Date('2026-03-01T00:00:00Z')),
          to: timestampFromDate(new Date('2026-04-01T00:00:00Z')),
        })
      ).byCurrency;
    expect(await spendOf([doomed.id, kept.id])).toEqual([{ currency: 'USD', amount: 5 }]);

    await client.deleteConnection({ id: doomed.id }, asA);
    expect(await spendOf([doomed.id, kept.id])).toEqual([{ currency: 'USD', amount: 2 }]);
    await expect(client.getConnection({ id: doomed.id }, asA)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.deleteConnection({ id: doomed.id }, asA)).rejects.toBeInstanceOf(NotFoundError);
    const deleted = await eventually(() =>
      eventsFor(doomed.id).find((event) => event.type === 'costs.connection.deleted'),
    );
    expect(decodeEvent(events.ConnectionChangedSchema, deleted)).toMatchObject({
      connectionId: doomed.id,
      teamId: asA.teamId,
      name: 'doomed',
    });
    // Within one redelivery: a purge that finds the raw rows' root busy (a reader, autovacuum) comes back
    // 10 s later (purge.ts); CI under load met that once.
    await eventually(
      async () => ((await costRowsOf(doomed.id)).every((n) => n === 0) ? true : undefined),
      25_000,
    );
    const { rows: spendRows } = await db.query('SELECT 1 FROM daily_spend WHERE connection_id = $1', [
      doomed.id,
    ]);
    expect(spendRows).toEqual([]);
    // Its raw rows went as whole tables (the connection's partitions), the kept one's stay.
    const tablesOf = async (connectionId: string) =>
      (
        await db.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM cost_record_periods WHERE connection_id = $1)
             + (SELECT count(*) FROM pg_class WHERE relname LIKE 'cost_records_' || $1 || '%')::int AS n`,
          [connectionId],
        )
      ).rows[0]!.n;
    expect(Number(await tablesOf(doomed.id))).toBe(0);
    expect(Number(await tablesOf(kept.id))).toBe(1 + 2); // its period listed, its two tables
    expect(await costRowsOf(kept.id)).toEqual([2, 2, 1]);
    // The name is free again.
    await expect(client.createConnection({ name: 'doomed', provider: 'aws' }, asA)).resolves.toMatchObject({
      name: 'doomed',
    });
  }, 60_000);

  it("finds the ids that are not the team's connections, each once", async () => {
    const mine = await client.createConnection({ name: 'mine-for-projects', provider: 'gcp' }, asA);
    const theirs = await client.createConnection({ name: 'theirs-for-projects', provider: 'gcp' }, asB);
    const unknown = newId('connection');
    const { missingIds } = await client.findMissingConnections(
      { ids: [mine.id, theirs.id, unknown, 'aws-1', theirs.id] },
      asA,
    );
    expect(missingIds).toEqual([theirs.id, unknown, 'aws-1']);
    expect((await client.findMissingConnections({ ids: [] }, asA)).missingIds).toEqual([]);
  });

  it('refuses a call without a team', async () => {
    await expect(client.listConnections({}, {})).rejects.toBeInstanceOf(BadRequestError);
  });
});
