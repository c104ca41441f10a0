import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { focusCsv } from '@costgov/costs';
import { costs } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import { eventually, serviceAddress } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { restCaller, startRestSystem } from './support/rest';

const bootstrapKey = 'cg_live_restrawretentionbootstrapkey00000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let teamId: string;

beforeAll(async () => {
  // The retention sweep every second, so the test sees it run as the service runs it.
  ({ system, teamId } = await startRestSystem(bootstrapKey, { env: { RAW_RETENTION_SWEEP_MS: '1000' } }));
}, 60_000);

afterAll(() => system?.stop());

const monthOf = (monthsBack: number) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsBack, 1))
    .toISOString()
    .slice(0, 7);
};

async function uploadFile(connectionId: string, body: Buffer) {
  const response = await fetch(`${system.url}/v1/guard/connections/${connectionId}/cost-data`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bootstrapKey}`, 'content-type': 'text/csv' },
    body,
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

describe('retention of raw rows, seen through REST', () => {
  it('drops raw periods past retention and a yearly budget still counts their spend', async () => {
    const connection = (
      await call('POST', '/v1/guard/connections', { body: { name: 'retained', provider: 'aws' } })
    ).body.data.id as string;
    const project = (
      await call('POST', '/v1/guard/projects', { body: { name: 'retained', connection_ids: [connection] } })
    ).body.data.id as string;
    // Past months only (no future charges): the last one is kept by a retention of one month, the two
    // before it are not.
    const files = await Promise.all(
      [1, 2, 3].map(async (monthsBack, i) => {
        const month = monthOf(monthsBack);
        const body = Buffer.concat(
          (await focusCsv({ rows: 300, month, seed: 40 + i }).toArray()) as Buffer[],
        );
        const records = parse(body, { columns: true }) as Array<Record<string, string>>;
        return { month, body, effective: records.reduce((sum, r) => sum + Number(r.EffectiveCost), 0) };
      }),
    );
    for (const file of files) await uploadFile(connection, file.body);
    const year = String(new Date().getUTCFullYear());
    const expected = files.filter((f) => f.month.startsWith(year)).reduce((sum, f) => sum + f.effective, 0);
    const budget = (
      await call('POST', '/v1/guard/budgets', {
        body: { project_id: project, name: 'yearly', amount: 1e9, currency: 'USD', period: 'yearly' },
      })
    ).body.data.id as string;
    const before = await eventually(async () => {
      const read = (await call('GET', `/v1/guard/budgets/${budget}`)).body.data;
      return read.evaluated_at && read.current_spend > 0 ? read : undefined;
    });
    expect(before.current_spend).toBeCloseTo(expected, 2);

    const retention = createRpcClient(costs.RetentionService, serviceAddress(system, 'costs'));
    try {
      await retention.setRawRetention({ rawRetentionMonths: 1 }, { teamId });
    } finally {
      retention.close();
    }
    const costsDb = system.services.find((s) => s.name === 'costs')!.db;
    const past = files.slice(1).map((f) => `${f.month}-01`);
    await eventually(async () => {
      const { rows } = await costsDb.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM cost_records WHERE connection_id = $1 AND billing_period_start = ANY($2::date[])`,
        [connection, past],
      );
      return Number(rows[0]!.n) === 0 ? true : undefined;
    }, 20_000);
    const { rows: kept } = await costsDb.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM cost_records WHERE connection_id = $1',
      [connection],
    );
    expect(Number(kept[0]!.n)).toBe(300);

    // Restating the kept month makes budgets evaluate again, from the rollups of every month.
    await uploadFile(connection, files[0]!.body);
    const after = await eventually(async () => {
      const read = (await call('GET', `/v1/guard/budgets/${budget}`)).body.data;
      return read.evaluated_at > before.evaluated_at ? read : undefined;
    });
    expect(after.current_spend).toBe(before.current_spend);
    expect(after.current_spend).toBeCloseTo(expected, 2);
  }, 90_000);
});
