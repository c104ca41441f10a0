import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@costgov/testing';
import { metrics } from '@costgov/telemetry';
import type { RunningSystem } from '../src/system';
import { restCaller, startRestSystem } from './support/rest';

/**
 * A service's variables mean under `npm start` what they mean when the service runs on its own: here
 * budgets', which the embedded system once started budgets without.
 */
const bootstrapKey = 'cg_live_servicevariablesbootstrapkey0000000';
const call = restCaller(() => system.url, bootstrapKey);
const evaluationIntervalMs = 200;
let system: RunningSystem;

beforeAll(async () => {
  ({ system } = await startRestSystem(bootstrapKey, {
    env: {
      BUDGETS_PROJECT_CACHE: 'off',
      BUDGET_EVALUATION_INTERVAL_MS: String(evaluationIntervalMs),
    },
  }));
});

afterAll(() => system?.stop());

const budgetsDb = () => system.services.find((service) => service.name === 'budgets')!.db;

/** Project reads the cache answered, from memory or not; it counts none when it is off. */
async function cachedProjectReads(): Promise<number> {
  const metric = await metrics.registry.getSingleMetric('budgets_project_reads_total')?.get();
  return (metric?.values ?? []).reduce((sum, { value }) => sum + value, 0);
}

async function newProject(): Promise<string> {
  const reply = await call('POST', '/v1/guard/projects', { body: { name: `p-${Date.now()}` } });
  expect(reply.status, reply.text).toBe(201);
  return reply.body.data.id;
}

describe('budgets under the embedded system', () => {
  it('BUDGETS_PROJECT_CACHE=off reads every project from the database', async () => {
    const id = await newProject();
    const before = await cachedProjectReads();
    for (let i = 0; i < 3; i++) expect((await call('GET', `/v1/guard/projects/${id}`)).status).toBe(200);
    expect(await cachedProjectReads()).toBe(before);
  });

  it('BUDGET_EVALUATION_INTERVAL_MS is how often budgets left to evaluate are evaluated', async () => {
    const projectId = await newProject();
    const created = await call('POST', '/v1/guard/budgets', {
      body: { project_id: projectId, name: 'b', amount: 100, currency: 'USD', period: 'monthly' },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as string;
    const needsEvaluation = async () =>
      (
        await budgetsDb().query<{ needs: boolean }>(
          'SELECT needs_evaluation AS needs FROM budgets WHERE id = $1',
          [id],
        )
      ).rows[0]!.needs;
    await eventually(async () => ((await needsEvaluation()) ? undefined : true));
    // As if costs had been down at the last evaluation: only the sweep evaluates it again.
    await budgetsDb().query('UPDATE budgets SET needs_evaluation = true WHERE id = $1', [id]);
    await eventually(async () => ((await needsEvaluation()) ? undefined : true), evaluationIntervalMs * 15);
  });
});
