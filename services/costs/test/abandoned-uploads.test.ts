import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox } from '@costgov/bus';
import type { Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { focusLines } from '../src/cost-data/generate';
import { costDataFactory } from '../src/cost-data/ingest';
import { startCosts, type CostsUnderTest } from './fixture';

const as = { teamId: newId('team') };
const setup = process.env.DATABASE_URL ? 'postgres' : 'pglite';

let costsService: CostsUnderTest;
let db: Db;

beforeAll(async () => {
  costsService = await startCosts();
  ({ db } = costsService);
}, 30_000);

afterAll(() => costsService?.stop());

const newConnection = async () =>
  (
    await costsService.clients.connections.createConnection(
      { name: `aws-${newId('event')}`, provider: 'aws' },
      as,
    )
  ).id;

const tableOf = (id: string) => `cost_staging_${id.replaceAll('-', '')}`;

async function stateOf(id: string) {
  const { rows } = await db.query<{ status: string; table: string | null }>(
    `SELECT status, to_regclass($2)::text AS table FROM cost_uploads WHERE id = $1`,
    [id, tableOf(id)],
  );
  return rows[0];
}

describe(`the sweep of uploads whose process is gone (${setup})`, () => {
  it('drops a load table minutes after its heartbeat stopped, not a day after it started', async () => {
    const connectionId = await newConnection();
    const at = new Date();
    const ago = (ms: number) => new Date(at.getTime() - ms);
    const minutes = 60_000;
    const uploads = [
      // Crashed an hour into a long upload: its last beat 11 minutes ago.
      { id: crypto.randomUUID(), startedAt: ago(60 * minutes), beat: ago(11 * minutes), swept: true },
      // Still streaming two hours on: it beat a minute ago.
      { id: crypto.randomUUID(), startedAt: ago(120 * minutes), beat: ago(minutes), swept: false },
      // An earlier version's upload (no heartbeat): swept a day after its start, as before.
      { id: crypto.randomUUID(), startedAt: ago(120 * minutes), beat: null, swept: false },
      { id: crypto.randomUUID(), startedAt: ago(25 * 60 * minutes), beat: null, swept: true },
    ];
    for (const upload of uploads) {
      await db.query(
        `INSERT INTO cost_uploads (id, team_id, connection_id, status, staging_table, started_at, heartbeat_at)
         VALUES ($1, $2, $3, 'loading', $4, $5, $6)`,
        [upload.id, as.teamId, connectionId, tableOf(upload.id), upload.startedAt, upload.beat],
      );
      await db.exec(`CREATE TABLE ${tableOf(upload.id)} (LIKE cost_records INCLUDING DEFAULTS)`);
    }
    const costData = costDataFactory({ db, outbox: createOutbox({ source: 'costs' }), now: () => at });
    expect(await costData.sweepAbandoned()).toBe(uploads.filter((upload) => upload.swept).length);
    for (const upload of uploads) {
      expect(await stateOf(upload.id)).toEqual(
        upload.swept ? { status: 'failed', table: null } : { status: 'loading', table: tableOf(upload.id) },
      );
    }
    for (const upload of uploads.filter((u) => !u.swept)) {
      await db.exec(`DROP TABLE ${tableOf(upload.id)}`);
      await db.query(`UPDATE cost_uploads SET status = 'failed' WHERE id = $1`, [upload.id]);
    }
  });

  it('leaves a slow upload alone while it streams: it beats, and is stored', async () => {
    const connectionId = await newConnection();
    // Beats every 50 ms, abandoned after 400 ms without one; the file streams for about 1.2 s.
    const costData = costDataFactory({
      db,
      outbox: createOutbox({ source: 'costs' }),
      now: () => new Date(),
      heartbeat: { everyMs: 50, staleAfterMs: 400 },
    });
    const lines = [...focusLines({ rows: 120, month: '2026-03', seed: 7 })];
    let uploadId: string | undefined;
    // Our upload's state after each sweep run while it streams.
    const sweeps: Array<string | undefined> = [];
    async function* slowBody() {
      yield Buffer.from(lines.slice(0, 2).join(''));
      for (let i = 2; i < lines.length; i += 20) {
        await sleep(200);
        const { rows } = await db.query<{ id: string }>(
          `SELECT id FROM cost_uploads WHERE connection_id = $1 AND status = 'loading'`,
          [connectionId],
        );
        uploadId ??= rows[0]?.id;
        await costData.sweepAbandoned();
        sweeps.push((await stateOf(uploadId!))?.status);
        yield Buffer.from(lines.slice(i, i + 20).join(''));
      }
    }
    const summary = await costData.upload(as.teamId, { connectionId, contentEncoding: '', body: slowBody() });
    expect(summary.rows).toBe(lines.length - 1);
    expect(sweeps.length).toBeGreaterThanOrEqual(5);
    expect(new Set(sweeps)).toEqual(new Set(['loading']));
    const { rows } = await db.query<{ status: string; beat_after_start_ms: number }>(
      `SELECT status, extract(epoch FROM heartbeat_at - started_at)::float8 * 1000 AS beat_after_start_ms
       FROM cost_uploads WHERE id = $1`,
      [uploadId],
    );
    expect(rows[0]!.status).toBe('stored');
    // The last beat came well after the start: it beat while streaming (more than the stale limit on).
    expect(Number(rows[0]!.beat_after_start_ms)).toBeGreaterThan(400);
  });
});
