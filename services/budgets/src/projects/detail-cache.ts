import { randomBytes } from 'node:crypto';
import { Counter } from 'prom-client';
import type { Db, Subscription } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { metrics } from '@costgov/telemetry';
import type { ProjectDetail } from './projects';

/** Where the migration's triggers name each project whose row or budgets changed. */
export const projectChangedChannel = 'budgets_project_changed';

export interface ProjectReadCacheOptions {
  db: Db;
  logger: Pick<Logger, 'warn' | 'info'>;
  /** Projects kept, least recently read dropped first. */
  maxEntries?: number;
  /** An entry older than this is read again, whatever the notifications said. */
  maxAgeMs?: number;
  /** A barrier that has not come back by then sends its reads to the database. */
  barrierTimeoutMs?: number;
  /** Pause before subscribing again after the subscribed connection was lost. */
  resubscribeMs?: number;
}

export interface ProjectReadCache {
  /** The project as `load` would read it now: from memory when no committed change can have passed it. */
  read(teamId: string, id: string, load: () => Promise<ProjectDetail>): Promise<ProjectDetail>;
  /** Reads answered from memory, from the database and stored, and from the database without the cache. */
  readonly counts: { hits: number; misses: number; bypassed: number };
  stop(): Promise<void>;
}

const reads = new Counter({
  name: 'budgets_project_reads_total',
  help: 'Project reads by where they were answered: hit (memory), miss (database, then kept), bypass (database: no subscription, or a barrier that timed out). Not counted with BUDGETS_PROJECT_CACHE=off.',
  labelNames: ['result'],
  registers: [metrics.registry],
});

interface Entry {
  teamId: string;
  detail: ProjectDetail;
  at: number;
}

/**
 * The project read (GET /v1/guard/projects/:id, the most frequent call) answered from this replica's
 * memory without giving up read-after-write consistency across replicas:
 * - every change to a project or its budgets notifies `budgets_project_changed` with the project id in
 *   the committing transaction (migration 0003), and the entry is dropped when it arrives;
 * - before a read looks at memory it waits for a barrier: a notification this replica sends on its own
 *   channel over the same connection. Postgres delivers notifications in commit order, so when the
 *   barrier comes back, the notification of every change committed before the read began has been
 *   applied. Reads arriving while a barrier is out wait for the next one, so one round trip serves
 *   them all;
 * - a read from the database is stored only if no change of that project was notified while it ran;
 * - answers are shared by every read that gets them: callers must not change them;
 * - while the subscribed connection is down (or a barrier times out) reads go to the database, and the
 *   memory is emptied, since notifications may have been missed.
 * Hand-written: no cache library invalidates on Postgres notifications behind a commit-order barrier.
 */
export function projectReadCache(options: ProjectReadCacheOptions): ProjectReadCache {
  const { db, logger } = options;
  const maxEntries = options.maxEntries ?? 10_000;
  const maxAgeMs = options.maxAgeMs ?? 300_000;
  const barrierTimeoutMs = options.barrierTimeoutMs ?? 1_000;
  const resubscribeMs = options.resubscribeMs ?? 1_000;
  const syncChannel = `budgets_sync_${randomBytes(8).toString('hex')}`;
  const entries = new Map<string, Entry>();
  /** Projects being read from the database, and whether a change of theirs arrived meanwhile. */
  const loading = new Map<string, { readers: number; changed: boolean }>();
  const counts = { hits: 0, misses: 0, bypassed: 0 };
  /** Moves on whenever everything is forgotten (the subscription changed or the cache stopped). */
  let version = 0;
  let subscription: Subscription | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let sequence = 0;
  /** Reads waiting for the next barrier; the barrier out, with the reads it answers. */
  let waiting: Array<(synced: boolean) => void> = [];
  let out: { token: string; waiters: Array<(synced: boolean) => void>; timer: NodeJS.Timeout } | undefined;

  const forgetAll = () => {
    entries.clear();
    version++;
  };

  function settle(token: string, synced: boolean): void {
    if (out?.token !== token) return;
    const { waiters, timer } = out;
    out = undefined;
    clearTimeout(timer);
    for (const waiter of waiters) waiter(synced);
    if (waiting.length > 0) sendBarrier();
  }

  function sendBarrier(): void {
    const current = subscription;
    if (!current) {
      const waiters = waiting;
      waiting = [];
      for (const waiter of waiters) waiter(false);
      return;
    }
    const token = String(++sequence);
    out = {
      token,
      waiters: waiting,
      timer: setTimeout(() => {
        settle(token, false);
        // Notifications that do not come back (a pooler in transaction mode, a stuck connection) would
        // make every read wait this long: the subscription is dropped and tried again later instead.
        if (subscription !== current) return;
        logger.warn(
          { timeout_ms: barrierTimeoutMs },
          'project cache barrier timed out; reading the database until subscribed again',
        );
        unsubscribe(current);
      }, barrierTimeoutMs).unref(),
    };
    waiting = [];
    current.notify(syncChannel, token).catch((error: unknown) => {
      settle(token, false);
      // The connection is gone even if its loss was not reported (it can be, while subscribing).
      if (subscription !== current) return;
      logger.warn(
        { err: error },
        'project cache barrier failed; reading the database until subscribed again',
      );
      unsubscribe(current);
    });
  }

  /** Resolves true once every change committed before the call has been applied to the memory. */
  const barrier = (): Promise<boolean> =>
    new Promise((resolve) => {
      waiting.push(resolve);
      if (!out) sendBarrier();
    });

  function onNotify(channel: string, payload: string): void {
    if (channel === projectChangedChannel) {
      entries.delete(payload);
      const load = loading.get(payload);
      if (load) load.changed = true;
    } else if (channel === syncChannel) settle(payload, true);
  }

  /** Stops using `current`: memory emptied, reads to the database, subscribing again after a pause. */
  function unsubscribe(current: Subscription): void {
    subscription = undefined;
    forgetAll();
    if (out) settle(out.token, false);
    void current.close().catch(() => undefined);
    if (!stopped) retry = setTimeout(() => void subscribe(), resubscribeMs).unref();
  }

  async function subscribe(): Promise<void> {
    if (stopped || !db.subscribe) return;
    let opened: Subscription | undefined;
    try {
      opened = await db.subscribe([projectChangedChannel, syncChannel], onNotify, (error) => {
        if (!opened || subscription !== opened) return; // lost while connecting: the catch below retries
        logger.warn({ err: error }, 'project cache lost its subscription; reading the database meanwhile');
        unsubscribe(opened);
      });
      if (stopped) return void (await opened.close());
      forgetAll(); // whatever was read before the subscription may have missed a notification
      subscription = opened;
    } catch (error) {
      logger.warn({ err: error }, 'project cache cannot subscribe; reading the database meanwhile');
      if (!stopped) retry = setTimeout(() => void subscribe(), resubscribeMs).unref();
    }
  }
  void subscribe();

  return {
    counts,
    async read(teamId, id, load) {
      if (!subscription || !(await barrier())) {
        counts.bypassed++;
        reads.inc({ result: 'bypass' });
        return load();
      }
      const entry = entries.get(id);
      if (entry && entry.teamId === teamId && Date.now() - entry.at < maxAgeMs) {
        counts.hits++;
        reads.inc({ result: 'hit' });
        entries.delete(id); // re-inserted: the Map's order is the order of last reads
        entries.set(id, entry);
        return entry.detail;
      }
      counts.misses++;
      reads.inc({ result: 'miss' });
      const before = version;
      const readOn = subscription;
      const inFlight = loading.get(id) ?? { readers: 0, changed: false };
      inFlight.readers++;
      loading.set(id, inFlight);
      let detail: ProjectDetail;
      try {
        detail = await load();
      } finally {
        if (--inFlight.readers === 0) loading.delete(id);
      }
      // Kept only when no change of this project (and no loss of notifications) came while it was read.
      if (!inFlight.changed && version === before && subscription === readOn && subscription) {
        entries.delete(id);
        entries.set(id, { teamId, detail, at: Date.now() });
        if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
      }
      return detail;
    },
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const current = subscription;
      subscription = undefined;
      forgetAll();
      if (out) settle(out.token, false);
      await current?.close();
    },
  };
}
