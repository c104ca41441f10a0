import { NotFoundError } from '@costgov/errors';
import type { Db, Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { addDays, dayOf, postureDay } from './dates';
import {
  breakdownOf,
  gradeOf,
  MAX_SCORE,
  scoreOf,
  trendOf,
  type Breakdown,
  type Grade,
  type Trend,
} from './score';
import type { PostureSources } from './sources';

export interface CostPosture {
  score: number;
  maxScore: number;
  grade: Grade;
  breakdown: Breakdown;
  trend: Trend;
  date: string;
}

/** Cost of the 30 days up to and including the posture's day counts for tag coverage. */
const TAG_COVERAGE_DAYS = 30;

interface Scope {
  teamId: string;
  /** '' for the team-wide posture. */
  projectId: string;
}

/**
 * The cost posture of a team or one of its projects. Today's is computed from budgets, costs and the
 * findings, and stored as today's snapshot; a past day answers from its snapshot (404 when none was
 * taken that day: the inputs of the past are not kept, so it cannot be computed after the fact).
 */
export function postureFactory(deps: {
  db: Db;
  now: () => Date;
  sources: PostureSources;
  logger?: Logger;
  /** How long today's posture of a scope is reused before it is computed again; 0 (default): never. */
  cacheMs?: number;
}) {
  const { db, now, sources } = deps;
  const cacheMs = deps.cacheMs ?? 0;
  // Today's posture per scope and when it was computed: a dashboard polling it costs one lookup, not
  // four calls to other services. Bounded: cleared whole when it grows past maxCached scopes.
  const cached = new Map<string, { at: number; posture: CostPosture }>();
  const maxCached = 10_000;

  async function findingCounts(scope: Scope): Promise<{ total: number; adopted: number }> {
    const { rows } = await db.query<{ total: number; adopted: number }>(
      `SELECT count(*)::int AS total,
         (count(*) FILTER (WHERE status IN ('resolved', 'suppressed')))::int AS adopted
       FROM findings WHERE team_id = $1 AND ($2 = '' OR project_id = $2)`,
      [scope.teamId, scope.projectId],
    );
    return rows[0] ?? { total: 0, adopted: 0 };
  }

  async function compute(scope: Scope, day: string): Promise<Breakdown> {
    // Asked at once: a project that is not the team's rejects the whole with its 404.
    const [connectionIds, budgetCounts, requiredTags, findings] = await Promise.all([
      scope.projectId
        ? sources.projectConnections(scope.teamId, scope.projectId)
        : sources.teamConnections(scope.teamId),
      sources.budgetCounts(scope.teamId, scope.projectId || null),
      sources.requiredTags(scope.teamId),
      findingCounts(scope),
    ]);
    const tagCoverage =
      requiredTags.length === 0
        ? null
        : connectionIds.length === 0
          ? 1
          : await sources.tagCoverage({
              teamId: scope.teamId,
              connectionIds,
              requiredTags,
              from: new Date(`${addDays(day, 1 - TAG_COVERAGE_DAYS)}T00:00:00Z`),
              to: new Date(`${addDays(day, 1)}T00:00:00Z`),
            });
    return breakdownOf({ budgets: budgetCounts, tagCoverage, findings });
  }

  async function snapshotOf(q: Queryable, scope: Scope, day: string) {
    const { rows } = await q.query<{ score: number; breakdown: Breakdown }>(
      `SELECT score, breakdown FROM posture_snapshots WHERE team_id = $1 AND project_id = $2 AND date = $3`,
      [scope.teamId, scope.projectId, day],
    );
    return rows[0] ?? null;
  }

  async function store(scope: Scope, day: string, breakdown: Breakdown): Promise<void> {
    await db.query(
      `INSERT INTO posture_snapshots (team_id, project_id, date, score, breakdown, taken_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (team_id, project_id, date)
       DO UPDATE SET score = excluded.score, breakdown = excluded.breakdown, taken_at = excluded.taken_at`,
      [scope.teamId, scope.projectId, day, scoreOf(breakdown), JSON.stringify(breakdown), now()],
    );
  }

  /**
   * Today's posture of a scope, computed and stored as today's snapshot; written only when it changed,
   * so frequent reads of a steady posture do not queue on the row.
   */
  async function snapshotToday(scope: Scope): Promise<Breakdown> {
    const today = dayOf(now());
    const [breakdown, stored] = await Promise.all([compute(scope, today), snapshotOf(db, scope, today)]);
    const same =
      stored !== null &&
      stored.breakdown.budgetCompliance === breakdown.budgetCompliance &&
      stored.breakdown.tagCoverage === breakdown.tagCoverage &&
      stored.breakdown.recommendationAdoption === breakdown.recommendationAdoption;
    if (!same) await store(scope, today, breakdown);
    return breakdown;
  }

  return {
    async getCostPosture(teamId: string, asked: { projectId?: string; date?: string }): Promise<CostPosture> {
      const today = dayOf(now());
      const day = postureDay(asked.date ?? '', today);
      const scope = { teamId, projectId: asked.projectId ?? '' };
      const key = `${teamId}\u0000${scope.projectId}`;
      const hit = day === today && cacheMs > 0 ? cached.get(key) : undefined;
      if (hit && hit.posture.date === today && now().getTime() - hit.at < cacheMs) return hit.posture;
      let breakdown: Breakdown;
      if (day === today) breakdown = await snapshotToday(scope);
      else {
        // Another team's project must not learn whether it has history: ask budgets first.
        if (scope.projectId) await sources.projectConnections(teamId, scope.projectId);
        const snapshot = await snapshotOf(db, scope, day);
        if (!snapshot) throw new NotFoundError('Cost posture snapshot', day);
        breakdown = snapshot.breakdown;
      }
      const score = scoreOf(breakdown);
      const earlier = await snapshotOf(db, scope, addDays(day, -7));
      const posture: CostPosture = {
        score,
        maxScore: MAX_SCORE,
        grade: gradeOf(score),
        breakdown,
        trend: trendOf(score, earlier?.score ?? null),
        date: day,
      };
      if (day === today && cacheMs > 0) {
        if (cached.size >= maxCached) cached.clear();
        cached.set(key, { at: now().getTime(), posture });
      }
      return posture;
    },

    /**
     * Takes today's snapshot of every scope asked for in the last `days` days that has none yet, so
     * history has a row per day even when nobody reads it. One failing scope (a deleted project, a
     * service down) is logged and skipped; the next sweep tries again. Resolves with the scopes taken.
     */
    async snapshotDue(days = 30): Promise<number> {
      const today = dayOf(now());
      const { rows } = await db.query<Scope>(
        `SELECT DISTINCT team_id AS "teamId", project_id AS "projectId" FROM posture_snapshots s
         WHERE s.date >= $1 AND NOT EXISTS (SELECT 1 FROM posture_snapshots t
           WHERE t.team_id = s.team_id AND t.project_id = s.project_id AND t.date = $2)`,
        [addDays(today, -days), today],
      );
      let taken = 0;
      for (const scope of rows) {
        try {
          await snapshotToday(scope);
          taken += 1;
        } catch (error) {
          if (!(error instanceof NotFoundError))
            deps.logger?.warn({ err: error, ...scope }, 'posture snapshot failed');
        }
      }
      return taken;
    },
  };
}

export type Posture = ReturnType<typeof postureFactory>;
