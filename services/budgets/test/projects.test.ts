import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgets } from '@costgov/contracts';
import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  UnavailableError,
  ValidationError,
} from '@costgov/errors';
import { newId, newUuid } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freePort, freshDb, testBus } from '@costgov/testing';
import { budgetsModule } from '../src/module';
import type { TeamUsers } from '../src/projects/team-users';
import type { TeamConnections } from '../src/projects/team-connections';
import type { SpendSource } from '../src/budgets/spend';

const logger = createLogger('test', 'silent');
const teamA = newId('team');
const teamB = newId('team');
const asA = { teamId: teamA };
const asB = { teamId: teamB };

/** Identity stand-in: the active users of each team, what it was asked, and whether it is down. */
const activeUsers = new Map<string, Set<string>>();
const lookups: string[][] = [];
let identityDown = false;
const teamUsers: TeamUsers = {
  async activeUserIds(teamId, ids) {
    lookups.push(ids);
    if (identityDown) throw new UnavailableError();
    const known = activeUsers.get(teamId) ?? new Set();
    return new Set(ids.filter((id) => known.has(id)));
  },
};
/** A fresh active user of `team`. */
const userOf = (team: { teamId: string }) => {
  const id = newUuid();
  activeUsers.set(team.teamId, (activeUsers.get(team.teamId) ?? new Set()).add(id));
  return id;
};

/** Costs stand-in: a connection id is the team's unless registered to another team; costs may be down. */
const connectionTeams = new Map<string, string>();
let costsDown = false;
const teamConnections: TeamConnections = {
  async missingIds(teamId, ids) {
    if (costsDown) throw new UnavailableError();
    return new Set(ids.filter((id) => (connectionTeams.get(id) ?? teamId) !== teamId));
  },
};
const spendSource: SpendSource = {
  async spendOf() {
    return { converted: 0, unconverted: [], lastChargeDay: null, usage: 0, lastUsageDay: null };
  },
};

let service: RunningService;
let client: RpcClient<typeof budgets.ProjectsService>;
let bus: Awaited<ReturnType<typeof testBus>>;
const received: CloudEvent[] = [];

beforeAll(async () => {
  bus = await testBus(logger);
  const db = await freshDb('budgets');
  service = await startService(budgetsModule({ teamUsers, teamConnections, spendSource }), {
    logger,
    bus,
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  client = createRpcClient(budgets.ProjectsService, `127.0.0.1:${service.port}`);
  await bus.consume({
    durable: 'budgets_test_observer',
    types: ['budgets.project.>'],
    handler: async (event) => {
      received.push(event);
    },
  });
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  await bus?.close();
});

const eventsFor = (projectId: string) => received.filter((event) => event.subject === projectId);

describe(`projects service (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${process.env.NATS_URL ? 'nats' : 'in-process bus'})`, () => {
  describe('create', () => {
    it('stores the project and publishes budgets.project.created', async () => {
      const approver = userOf(asA);
      const project = await client.createProject(
        {
          name: 'checkout',
          connectionIds: [newId('connection')],
          approvalRules: { requireApprovalAbove: 500, approvers: [approver] },
        },
        asA,
      );
      expect(project.id).toMatch(/^prj_/);
      expect(project).toMatchObject({
        name: 'checkout',
        status: 'active',
        budgetCount: 0,
        violationCount: 0,
      });
      expect(project.approvalRules).toMatchObject({ requireApprovalAbove: 500, approvers: [approver] });
      const [event] = await eventually(() =>
        eventsFor(project.id).length ? eventsFor(project.id) : undefined,
      );
      expect(event!.type).toBe('budgets.project.created');
      expect(decodeEvent(events.ProjectChangedSchema, event!)).toMatchObject({
        projectId: project.id,
        teamId: teamA,
        name: 'checkout',
      });
    });

    it('refuses a duplicate name in the same team, regardless of case, and allows it in another team', async () => {
      await client.createProject({ name: 'Payments' }, asA);
      await expect(client.createProject({ name: 'payments' }, asA)).rejects.toBeInstanceOf(ConflictError);
      await expect(client.createProject({ name: 'payments' }, asB)).resolves.toMatchObject({
        name: 'payments',
      });
    });

    it.each([
      ['a blank name', { name: '   ' }, 'name'],
      ['a name over 200 characters', { name: 'x'.repeat(201) }, 'name'],
      ['a malformed connection id', { name: 'ok-1', connectionIds: ['aws-1'] }, 'connection_ids[0]'],
      [
        'approval rules without approvers',
        { name: 'ok-2', approvalRules: { requireApprovalAbove: 1, approvers: [] } },
        'approval_rules.approvers',
      ],
      [
        'a negative approval threshold',
        { name: 'ok-3', approvalRules: { requireApprovalAbove: -1, approvers: [userOf(asA)] } },
        'approval_rules.require_approval_above',
      ],
      [
        '51 approvers',
        {
          name: 'ok-4',
          approvalRules: { approvers: Array.from({ length: 51 }, () => userOf(asA)) },
        },
        'approval_rules.approvers',
      ],
      ['a name of 201 characters', { name: '\u{1F600}'.repeat(201) }, 'name'],
      ['a NUL in the name', { name: 'ok\u0000-5' }, 'name'],
      [
        'a NUL in an approver id',
        { name: 'ok-7', approvalRules: { approvers: [`${userOf(asA)}\u0000`] } },
        'approval_rules.approvers[0]',
      ],
      [
        'an approver id of 201 characters',
        { name: 'ok-8', approvalRules: { approvers: ['u'.repeat(201)] } },
        'approval_rules.approvers[0]',
      ],
    ])('refuses %s with a field violation and stores nothing', async (_case, request, field) => {
      const error = await client.createProject(request, asA).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.map((d) => d.field)).toContain(field);
      const { projects } = await client.listProjects({}, asA);
      expect(projects.map((p) => p.name)).not.toContain(request.name.trim() || '   ');
    });
  });

  describe('text is counted in characters', () => {
    it('accepts a name of 200 emoji (400 UTF-16 units) and keeps it whole', async () => {
      const name = '\u{1F680}'.repeat(200);
      const project = await client.createProject({ name }, asA);
      expect(project.name).toBe(name);
    });
  });

  describe('approval rules', () => {
    it('accepts rules without an amount (every change needs approval) and returns no amount', async () => {
      const approver = userOf(asA);
      const created = await client.createProject(
        { name: 'no-limit', approvalRules: { approvers: [approver] } },
        asA,
      );
      expect(created.approvalRules).toBeDefined();
      expect(created.approvalRules!.requireApprovalAbove).toBeUndefined();
      const read = await client.getProject({ id: created.id }, asA);
      expect(read.approvalRules?.requireApprovalAbove).toBeUndefined();
      expect(read.approvalRules?.approvers).toEqual([approver]);
    });

    it.each([1, 50])('accepts %i approvers', async (count) => {
      const approvers = Array.from({ length: count }, () => userOf(asA));
      const project = await client.createProject(
        { name: `approvers-${count}`, approvalRules: { requireApprovalAbove: 0, approvers } },
        asA,
      );
      expect(project.approvalRules?.approvers).toEqual(approvers);
    });

    it("names each approver that is not an active user of the team (another team's included), and stores nothing", async () => {
      const known = userOf(asA);
      const stranger = userOf(asB);
      const approvers = [known, newUuid(), stranger, 'ada@example.com'];
      const error = await client
        .createProject({ name: 'unknown-approvers', approvalRules: { approvers } }, asA)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.map((d) => d.field)).toEqual([
        'approval_rules.approvers[1]',
        'approval_rules.approvers[2]',
        'approval_rules.approvers[3]',
      ]);
      expect((error as ValidationError).details[0]!.message).toContain(approvers[1]);
      const { projects } = await client.listProjects({}, asA);
      expect(projects.map((p) => p.name)).not.toContain('unknown-approvers');
    });

    it('reports field errors and unknown approvers together, and asks identity only about well-formed ids', async () => {
      lookups.length = 0;
      const unknown = newUuid();
      const error = await client
        .createProject({ name: ' ', approvalRules: { approvers: [unknown, 'bad\u0000id'] } }, asA)
        .catch((e: unknown) => e);
      expect((error as ValidationError).details.map((d) => d.field)).toEqual([
        'name',
        'approval_rules.approvers[1]',
        'approval_rules.approvers[0]',
      ]);
      expect(lookups).toEqual([[unknown]]);
    });

    it('checks approvers on update too and leaves the project unchanged when one is unknown', async () => {
      const approver = userOf(asA);
      const created = await client.createProject(
        { name: 'update-rules', approvalRules: { approvers: [approver] } },
        asA,
      );
      const error = await client
        .updateProject({ id: created.id, approvalRules: { approvers: [approver, newUuid()] } }, asA)
        .catch((e: unknown) => e);
      expect((error as ValidationError).details.map((d) => d.field)).toEqual(['approval_rules.approvers[1]']);
      expect((await client.getProject({ id: created.id }, asA)).approvalRules?.approvers).toEqual([approver]);
    });

    it('answers UNAVAILABLE when identity is down, and stores nothing', async () => {
      identityDown = true;
      try {
        await expect(
          client.createProject({ name: 'identity-down', approvalRules: { approvers: [userOf(asA)] } }, asA),
        ).rejects.toBeInstanceOf(UnavailableError);
      } finally {
        identityDown = false;
      }
      const { projects } = await client.listProjects({}, asA);
      expect(projects.map((p) => p.name)).not.toContain('identity-down');
    });

    it('does not ask identity when no approval rules are sent', async () => {
      lookups.length = 0;
      identityDown = true;
      try {
        await client.createProject({ name: 'no-rules' }, asA);
      } finally {
        identityDown = false;
      }
      expect(lookups).toEqual([]);
    });
  });

  describe('connections checked against costs', () => {
    it('refuses a connection of another team or unknown to costs, naming its index, and stores nothing', async () => {
      const foreign = newId('connection');
      connectionTeams.set(foreign, teamB);
      const error = await client
        .createProject({ name: 'foreign-connection', connectionIds: [newId('connection'), foreign] }, asA)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details).toEqual([
        { field: 'connection_ids[1]', message: `'${foreign}' is not a connection of this team` },
      ]);
      const { projects } = await client.listProjects({}, asA);
      expect(projects.map((p) => p.name)).not.toContain('foreign-connection');
    });

    it('checks connection_ids on PATCH, and leaves the project as it was when one is unknown', async () => {
      const project = await client.createProject({ name: 'patched-connections' }, asA);
      const foreign = newId('connection');
      connectionTeams.set(foreign, teamB);
      await expect(
        client.updateProject({ id: project.id, connectionIds: { values: [foreign] } }, asA),
      ).rejects.toBeInstanceOf(ValidationError);
      expect((await client.getProject({ id: project.id }, asA)).connectionIds).toEqual([]);
    });

    it('answers UNAVAILABLE when costs is down and connections are sent, and does not ask it otherwise', async () => {
      costsDown = true;
      try {
        await expect(
          client.createProject({ name: 'costs-down', connectionIds: [newId('connection')] }, asA),
        ).rejects.toBeInstanceOf(UnavailableError);
        await expect(client.createProject({ name: 'costs-down-no-connections' }, asA)).resolves.toMatchObject(
          { name: 'costs-down-no-connections' },
        );
      } finally {
        costsDown = false;
      }
    });
  });

  describe('identity unreachable over gRPC', () => {
    it('answers UNAVAILABLE (the gateway says 503) to rules it cannot check, and serves the rest', async () => {
      const db = await freshDb('budgets');
      const alone = await startService(
        budgetsModule({
          identityAddress: `127.0.0.1:${await freePort()}`,
          costsAddress: `127.0.0.1:${await freePort()}`,
        }),
        {
          logger,
          bus,
          env: { RPC_DEADLINE_MS: '2000' },
          openDb: async () => db,
          dataDir: 'memory',
          grpcAddress: '127.0.0.1:0',
        },
      );
      const aloneClient = createRpcClient(budgets.ProjectsService, `127.0.0.1:${alone.port}`);
      try {
        await expect(
          aloneClient.createProject({ name: 'unchecked', approvalRules: { approvers: [newUuid()] } }, asA),
        ).rejects.toBeInstanceOf(UnavailableError);
        await expect(
          aloneClient.createProject({ name: 'unchecked', connectionIds: [newId('connection')] }, asA),
        ).rejects.toBeInstanceOf(UnavailableError);
        await expect(aloneClient.createProject({ name: 'no-rules' }, asA)).resolves.toMatchObject({
          name: 'no-rules',
        });
      } finally {
        aloneClient.close();
        await alone.stop();
      }
    });
  });

  describe('read and list', () => {
    it('filters by status and connection and pages with meta', async () => {
      const team = { teamId: newId('team') };
      const connection = newId('connection');
      for (let i = 0; i < 5; i++) {
        await client.createProject({ name: `p${i}`, connectionIds: i % 2 === 0 ? [connection] : [] }, team);
      }
      const archived = await client.createProject({ name: 'old' }, team);
      await client.updateProject({ id: archived.id, status: 'archived' }, team);

      const page1 = await client.listProjects({ page: { page: 1, perPage: 2 } }, team);
      expect(page1.projects.map((p) => p.name)).toEqual(['old', 'p4']);
      expect(page1.meta).toMatchObject({ currentPage: 1, perPage: 2, totalPages: 3, totalCount: 6 });
      const page3 = await client.listProjects({ page: { page: 3, perPage: 2 } }, team);
      expect(page3.projects.map((p) => p.name)).toEqual(['p1', 'p0']);
      const past = await client.listProjects({ page: { page: 9, perPage: 2 } }, team);
      expect(past.projects).toEqual([]);

      const active = await client.listProjects({ status: 'active' }, team);
      expect(active.meta?.totalCount).toBe(5);
      const onConnection = await client.listProjects({ connectionId: connection }, team);
      expect(onConnection.projects.map((p) => p.name)).toEqual(['p4', 'p2', 'p0']);
    });

    it('refuses an unknown status filter and a page size over 100', async () => {
      await expect(client.listProjects({ status: 'deleted' }, asA)).rejects.toBeInstanceOf(BadRequestError);
      await expect(client.listProjects({ page: { page: 1, perPage: 101 } }, asA)).rejects.toBeInstanceOf(
        BadRequestError,
      );
    });

    it('returns nested approval rules and budgets on the single read', async () => {
      const [a, b] = [userOf(asA), userOf(asA)];
      const created = await client.createProject(
        { name: 'detail', approvalRules: { requireApprovalAbove: 10, approvers: [a, a, b] } },
        asA,
      );
      const project = await client.getProject({ id: created.id }, asA);
      expect(project.approvalRules).toMatchObject({ requireApprovalAbove: 10, approvers: [a, b] });
      expect(project.budgets).toEqual([]);
    });
  });

  describe('update', () => {
    it('changes the given fields, publishes what changed, and leaves the rest', async () => {
      const x = userOf(asA);
      const created = await client.createProject(
        { name: 'to-update', approvalRules: { requireApprovalAbove: 1, approvers: [x] } },
        asA,
      );
      const updated = await client.updateProject(
        { id: created.id, name: 'renamed', connectionIds: { values: [newId('connection')] } },
        asA,
      );
      expect(updated).toMatchObject({ name: 'renamed', status: 'active' });
      expect(updated.connectionIds).toHaveLength(1);
      expect(updated.approvalRules?.approvers).toEqual([x]);
      const update = await eventually(() =>
        eventsFor(created.id).find((e) => e.type === 'budgets.project.updated'),
      );
      expect(decodeEvent(events.ProjectChangedSchema, update).changedFields.sort()).toEqual([
        'connection_ids',
        'name',
      ]);

      const cleared = await client.updateProject({ id: created.id, clearApprovalRules: true }, asA);
      expect(cleared.approvalRules).toBeUndefined();
    });

    it('publishes nothing when nothing changes', async () => {
      const created = await client.createProject({ name: 'stable' }, asA);
      await client.updateProject({ id: created.id, name: 'stable' }, asA);
      await eventually(() => (eventsFor(created.id).length ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(eventsFor(created.id).map((e) => e.type)).toEqual(['budgets.project.created']);
    });

    it('refuses renaming onto another project of the team and an unknown status', async () => {
      await client.createProject({ name: 'taken' }, asA);
      const other = await client.createProject({ name: 'free' }, asA);
      await expect(client.updateProject({ id: other.id, name: 'TAKEN' }, asA)).rejects.toBeInstanceOf(
        ConflictError,
      );
      await expect(client.updateProject({ id: other.id, status: 'deleted' }, asA)).rejects.toBeInstanceOf(
        ValidationError,
      );
      expect((await client.getProject({ id: other.id }, asA)).name).toBe('free');
    });
  });

  describe('delete', () => {
    it('removes the project and publishes budgets.project.deleted', async () => {
      const created = await client.createProject({ name: 'doomed' }, asA);
      await client.deleteProject({ id: created.id }, asA);
      await expect(client.getProject({ id: created.id }, asA)).rejects.toBeInstanceOf(NotFoundError);
      const deleted = await eventually(() =>
        eventsFor(created.id).find((e) => e.type === 'budgets.project.deleted'),
      );
      expect(decodeEvent(events.ProjectDeletedSchema, deleted)).toMatchObject({
        projectId: created.id,
        teamId: teamA,
      });
      await expect(client.deleteProject({ id: created.id }, asA)).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe('tenant isolation', () => {
    it("answers not found for another team's project on every operation and changes nothing", async () => {
      const mine = await client.createProject({ name: 'isolated' }, asA);
      await expect(client.getProject({ id: mine.id }, asB)).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.updateProject({ id: mine.id, name: 'stolen' }, asB)).rejects.toBeInstanceOf(
        NotFoundError,
      );
      await expect(client.deleteProject({ id: mine.id }, asB)).rejects.toBeInstanceOf(NotFoundError);
      expect((await client.listProjects({}, asB)).projects.map((p) => p.id)).not.toContain(mine.id);
      expect((await client.getProject({ id: mine.id }, asA)).name).toBe('isolated');
    });

    it('answers not found to an id that is no project id (a NUL, another kind) on read, update and delete', async () => {
      for (const id of ['prj_\u0000', newId('budget'), '']) {
        await expect(client.getProject({ id }, asA)).rejects.toBeInstanceOf(NotFoundError);
        await expect(client.updateProject({ id, name: 'x' }, asA)).rejects.toBeInstanceOf(NotFoundError);
        await expect(client.deleteProject({ id }, asA)).rejects.toBeInstanceOf(NotFoundError);
      }
    });

    it('refuses a connection filter that is not acceptable text', async () => {
      await expect(client.listProjects({ connectionId: 'con_\u0000' }, asA)).rejects.toBeInstanceOf(
        BadRequestError,
      );
    });

    it('refuses a call without a team', async () => {
      await expect(client.listProjects({}, {})).rejects.toBeInstanceOf(BadRequestError);
    });
  });
});
