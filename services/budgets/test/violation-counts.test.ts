import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { encodePayload, type CloudEvent } from '@costgov/bus';
import { budgets, events } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { budgetsModule } from '../src/module';

const logger = createLogger('test', 'silent');
let bus: Awaited<ReturnType<typeof testBus>>;
let db: Db;
let service: RunningService;
let projects: RpcClient<typeof budgets.ProjectsService>;

beforeAll(async () => {
  bus = await testBus(logger);
  db = await freshDb('budgets');
  service = await startService(
    budgetsModule({
      teamUsers: { activeUserIds: async () => new Set() },
      teamConnections: { missingIds: async () => new Set() },
      spendSource: {
        spendOf: async () => ({
          converted: 0,
          unconverted: [],
          lastChargeDay: null,
          usage: 0,
          lastUsageDay: null,
        }),
      },
    }),
    { logger, bus, openDb: async () => db, dataDir: 'memory', grpcAddress: '127.0.0.1:0' },
  );
  projects = createRpcClient(budgets.ProjectsService, `127.0.0.1:${service.port}`);
});

afterAll(async () => {
  projects?.close();
  await service?.stop();
  await bus?.close();
});

type Change = 'created' | 'acknowledged' | 'resolved' | 'deleted';

/** `violations.violation.<change>` as the violations service's relay publishes it. */
function violationEvent(
  change: Change,
  project: { teamId: string; projectId: string },
  violationId: string,
  status: string,
  previousStatus: string,
): CloudEvent {
  return {
    specversion: '1.0',
    id: newId('event'),
    source: 'violations',
    type: `violations.violation.${change}`,
    subject: violationId,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(
      events.ViolationChangedSchema,
      create(events.ViolationChangedSchema, {
        violationId,
        ...project,
        budgetId: newId('budget'),
        severity: 'warning',
        status,
        previousStatus,
      }),
    ),
  };
}

async function deliver(...list: CloudEvent[]) {
  for (const event of list) await bus.publish(event);
  await eventually(async () => {
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])',
      [list.map((e) => e.id)],
    );
    return rows[0]!.n === list.length ? true : undefined;
  });
}

async function newProject() {
  const teamId = newId('team');
  const project = await projects.createProject({ name: `p-${newId('project')}` }, { teamId });
  return { teamId, projectId: project.id };
}

const countOf = async (project: { teamId: string; projectId: string }) =>
  (await projects.getProject({ id: project.projectId }, { teamId: project.teamId })).violationCount;

describe("a project's violation_count follows the violation events", () => {
  it('counts open and acknowledged violations: created +1, acknowledged 0, resolved -1, deleted -1', async () => {
    const project = await newProject();
    const [a, b, c] = [newId('violation'), newId('violation'), newId('violation')];
    const steps: Array<[CloudEvent, number]> = [
      [violationEvent('created', project, a, 'open', ''), 1],
      [violationEvent('created', project, b, 'open', ''), 2],
      [violationEvent('created', project, c, 'open', ''), 3],
      [violationEvent('acknowledged', project, a, 'acknowledged', 'open'), 3],
      [violationEvent('resolved', project, a, 'resolved', 'acknowledged'), 2],
      [violationEvent('resolved', project, b, 'resolved', 'open'), 1],
      [violationEvent('deleted', project, b, 'deleted', 'resolved'), 1],
      [violationEvent('deleted', project, c, 'deleted', 'open'), 0],
    ];
    for (const [event, expected] of steps) {
      await deliver(event);
      expect(await countOf(project), event.type).toBe(expected);
    }
  });

  it('counts a redelivered event once', async () => {
    const project = await newProject();
    const created = violationEvent('created', project, newId('violation'), 'open', '');
    await deliver(created);
    await bus.publish({ ...created }, { dedupeId: `${created.id}-again` });
    // Handled in order on one durable: once this one is counted, the redelivery was handled too.
    await deliver(violationEvent('created', project, newId('violation'), 'open', ''));
    expect(await countOf(project)).toBe(2);
  });

  it("never moves another team's project, nor fails on a deleted project", async () => {
    const ours = await newProject();
    await deliver(violationEvent('created', ours, newId('violation'), 'open', ''));
    await deliver(
      violationEvent('created', { ...ours, teamId: newId('team') }, newId('violation'), 'open', ''),
      violationEvent('created', { ...ours, projectId: newId('project') }, newId('violation'), 'open', ''),
    );
    expect(await countOf(ours)).toBe(1);
  });
});
