import { afterEach, describe, expect, it } from 'vitest';
import type { Db, Subscription } from '@costgov/db';
import { eventually } from '@costgov/testing';
import { projectChangedChannel, projectReadCache, type ProjectReadCache } from '../src/projects/detail-cache';
import type { ProjectDetail } from '../src/projects/projects';
import { logger, sleep } from './fixture';

/**
 * The cache's rules on a stand-in for Postgres's notification queue: notifications come back in the
 * order they were sent, each `delayMs` after the one before, as from a busy server. A replica's read
 * after a change committed elsewhere must wait until the change's notification is in.
 */
function slowQueue(delayMs: number) {
  const queue: Array<{ channel: string; payload: string }> = [];
  const subscribers = new Set<(channel: string, payload: string) => void>();
  let losers: Array<(error: Error) => void> = [];
  let pumping = false;
  let deliverBarriers = true;
  let failNotify = false;
  const notifyCalls: string[] = [];
  const pump = async () => {
    if (pumping) return;
    pumping = true;
    while (queue.length > 0) {
      await sleep(delayMs);
      const { channel, payload } = queue.shift()!;
      if (!deliverBarriers && channel !== projectChangedChannel) continue;
      for (const subscriber of subscribers) subscriber(channel, payload);
    }
    pumping = false;
  };
  const send = (channel: string, payload: string) => {
    queue.push({ channel, payload });
    void pump();
  };
  const db = {
    async subscribe(_channels, onNotify, onLost) {
      subscribers.add(onNotify);
      if (onLost) losers.push(onLost);
      const subscription: Subscription = {
        async notify(channel, payload) {
          notifyCalls.push(payload);
          if (failNotify) throw new Error('Connection terminated');
          send(channel, payload);
        },
        async close() {
          subscribers.delete(onNotify);
        },
      };
      return subscription;
    },
  } as Pick<Db, 'subscribe'> as Db;
  return {
    db,
    notifyCalls,
    /** A change committed by another replica: its notification joins the queue. */
    commit: (projectId: string) => send(projectChangedChannel, projectId),
    /** Sending fails from now on, without the loss being reported (a connection lost while subscribing). */
    failSends: (fail: boolean) => (failNotify = fail),
    /** Barrier notifications are dropped from now on (a server that stopped answering). */
    dropBarriers: () => (deliverBarriers = false),
    /** The subscribed connection drops. */
    lose: () => {
      const lost = losers;
      losers = [];
      subscribers.clear();
      for (const onLost of lost) onLost(new Error('connection terminated'));
    },
  };
}

/** The "database": the project's current name, read by `load`, counting the reads. */
function table(name: string) {
  const state = { name, loads: 0 };
  const load = async (): Promise<ProjectDetail> => {
    state.loads++;
    const now = new Date(0);
    return {
      id: 'prj_1',
      teamId: 'team_1',
      name: state.name,
      status: 'active',
      connectionIds: [],
      approvalRules: null,
      budgetCount: 0,
      violationCount: 0,
      createdAt: now,
      updatedAt: now,
      budgets: [],
    };
  };
  return { state, load };
}

let cache: ProjectReadCache | undefined;
afterEach(async () => {
  await cache?.stop();
  cache = undefined;
});

/** Reads until the subscription is up and the entry is kept (a hit). */
async function warm(c: ProjectReadCache, load: () => Promise<ProjectDetail>) {
  await eventually(async () => {
    const hits = c.counts.hits;
    await c.read('team_1', 'prj_1', load);
    return c.counts.hits > hits ? true : undefined;
  });
}

describe('project read cache barrier', () => {
  it('never answers from memory a project whose change committed before the read began', async () => {
    const pg = slowQueue(20);
    const { state, load } = table('v0');
    cache = projectReadCache({ db: pg.db, logger });
    await warm(cache, load);
    for (let i = 1; i <= 5; i++) {
      state.name = `v${i}`;
      pg.commit('prj_1'); // committed: its notification is on its way, 20 ms behind
      expect((await cache.read('team_1', 'prj_1', load)).name).toBe(`v${i}`);
    }
  });

  it('answers from memory when nothing changed, one barrier serving every read waiting for it', async () => {
    const pg = slowQueue(20);
    const { state, load } = table('v0');
    cache = projectReadCache({ db: pg.db, logger });
    await warm(cache, load);
    const loads = state.loads;
    const barriers = pg.notifyCalls.length;
    const answers = await Promise.all(Array.from({ length: 50 }, () => cache!.read('team_1', 'prj_1', load)));
    expect(answers.every((a) => a.name === 'v0')).toBe(true);
    expect(state.loads).toBe(loads);
    // The first read's barrier, then one for all those that arrived while it was out.
    expect(pg.notifyCalls.length - barriers).toBeLessThanOrEqual(2);
  });

  it('does not keep a read that a change notification overtook', async () => {
    const pg = slowQueue(5);
    const { state, load } = table('v0');
    cache = projectReadCache({ db: pg.db, logger });
    await warm(cache, load);
    pg.commit('prj_1');
    await sleep(50); // the entry is dropped
    // This read's database answer is older than a change whose notification arrives while it runs.
    const slowLoad = async () => {
      const answer = await load();
      state.name = 'v1';
      pg.commit('prj_1');
      await sleep(50);
      return answer;
    };
    expect((await cache.read('team_1', 'prj_1', slowLoad)).name).toBe('v0');
    const loads = state.loads;
    expect((await cache.read('team_1', 'prj_1', load)).name).toBe('v1');
    expect(state.loads).toBe(loads + 1);
  });

  it('reads the database when a barrier does not come back in time, and stops waiting for barriers', async () => {
    const pg = slowQueue(1);
    const { state, load } = table('v0');
    cache = projectReadCache({ db: pg.db, logger, barrierTimeoutMs: 500, resubscribeMs: 60_000 });
    await warm(cache, load);
    pg.dropBarriers();
    state.name = 'v1';
    const bypassed = cache.counts.bypassed;
    expect((await cache.read('team_1', 'prj_1', load)).name).toBe('v1');
    expect(cache.counts.bypassed).toBe(bypassed + 1);
    // The subscription is dropped: the next reads go to the database without sending a barrier.
    const barriers = pg.notifyCalls.length;
    state.name = 'v2';
    for (let i = 0; i < 5; i++) expect((await cache.read('team_1', 'prj_1', load)).name).toBe('v2');
    expect(pg.notifyCalls.length).toBe(barriers);
    expect(cache.counts.bypassed).toBe(bypassed + 6);
  });

  it('forgets everything when its connection drops, reads the database meanwhile, then subscribes again', async () => {
    const pg = slowQueue(1);
    const { state, load } = table('v0');
    cache = projectReadCache({ db: pg.db, logger, resubscribeMs: 100 });
    await warm(cache, load);
    pg.lose();
    state.name = 'v1'; // its notification is lost with the connection
    expect((await cache.read('team_1', 'prj_1', load)).name).toBe('v1');
    expect(cache.counts.bypassed).toBeGreaterThan(0);
    await warm(cache, load); // subscribed again: cached again
    expect((await cache.read('team_1', 'prj_1', load)).name).toBe('v1');
  });

  it('keeps at most maxEntries projects, dropping the least recently read', async () => {
    const pg = slowQueue(1);
    cache = projectReadCache({ db: pg.db, logger, maxEntries: 2 });
    const loads: Record<string, number> = {};
    const loader = (id: string) => async (): Promise<ProjectDetail> => {
      loads[id] = (loads[id] ?? 0) + 1;
      return { ...(await table(id).load()), id };
    };
    await eventually(async () => {
      await cache!.read('team_1', 'a', loader('a'));
      return cache!.counts.hits > 0 ? true : undefined;
    });
    await cache.read('team_1', 'b', loader('b'));
    await cache.read('team_1', 'a', loader('a')); // a is now the most recent
    await cache.read('team_1', 'c', loader('c')); // drops b
    const before = { ...loads };
    await cache.read('team_1', 'a', loader('a'));
    await cache.read('team_1', 'c', loader('c'));
    await cache.read('team_1', 'b', loader('b'));
    expect(loads.a).toBe(before.a);
    expect(loads.c).toBe(before.c);
    expect(loads.b).toBe(before.b! + 1);
  });

  it('drops a subscription whose barrier cannot be sent, and subscribes again', async () => {
    const pg = slowQueue(1);
    const { state, load } = table('v0');
    cache = projectReadCache({ db: pg.db, logger, resubscribeMs: 100 });
    await warm(cache, load);
    pg.failSends(true);
    state.name = 'v1';
    expect((await cache.read('team_1', 'prj_1', load)).name).toBe('v1');
    const barriers = pg.notifyCalls.length;
    expect((await cache.read('team_1', 'prj_1', load)).name).toBe('v1');
    expect(pg.notifyCalls.length).toBe(barriers); // unsubscribed: no barrier sent
    pg.failSends(false);
    await warm(cache, load);
  });

  it("keeps a read that only another project's change overtook", async () => {
    const pg = slowQueue(1);
    const { state, load } = table('v0');
    cache = projectReadCache({ db: pg.db, logger });
    await warm(cache, load);
    pg.commit('prj_1');
    await sleep(20); // the entry is dropped
    const loadWhileOtherChanges = async () => {
      const answer = await load();
      pg.commit('prj_2');
      await sleep(20);
      return answer;
    };
    await cache.read('team_1', 'prj_1', loadWhileOtherChanges);
    const loads = state.loads;
    const hits = cache.counts.hits;
    await cache.read('team_1', 'prj_1', load);
    expect(state.loads).toBe(loads);
    expect(cache.counts.hits).toBe(hits + 1);
  });
});
