import { NotFoundError } from '@costgov/errors';
import type { Db, Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { addDays, dayOf, postureDay } from './dates';
import {
  breakdownOf,
  gradeOf,
  maxScoreOf,
  scoreOf,
  SCORING_VERSION,
  trendOf,
  type Breakdown,
  type Grade,
  type Trend,
} from './score';
import type { CurrencyAmount, PostureSources } from './sources';

export interface CostPosture {
  score: number;
  maxScore: number;
  /** Null when no part is measured. */
  grade: Grade | null;
  breakdown: Breakdown;
  trend: Trend;
  date: string;
  /** Cost of the window left out of tag coverage because it cannot carry tags, per currency. */
  untaggableSpend: CurrencyAmount[];
}

/**
 * The posture's window: the 30 days up to and including its day. Tag coverage counts the cost charged in
 * it; recommendation adoption the findings open at some point in it (and whether a scan completed in it).
 */
const WINDOW_DAYS = 30;

/** What a snapshot keeps: the points, the cost left out of tag coverage, and the rule that scored it. */
interface Snapshot {
  breakdown: Breakdown;
  untaggableSpend: CurrencyAmount[];
  /** SCORING_VERSION when it was taken. */
  version: number;
}

type SnapshotJson = Breakdown & { untaggableSpend?: CurrencyAmount[]; version?: number };

/**
 * A stored snapshot's jsonb; one taken before parts could be left out (version 1) has numbers only, no
 * amounts and no version: it reads back as it was scored, and the trend does not compare it with a
 * posture of today's rule.
 */
const snapshotOfJson = (json: SnapshotJson): Snapshot => ({
  breakdown: {
    budgetCompliance: json.budgetCompliance ?? null,
    tagCoverage: json.tagCoverage ?? null,
    recommendationAdoption: json.recommendationAdoption ?? null,
  },
  untaggableSpend: (json.untaggableSpend ?? []).map(({ currency, amount }) => ({ currency, amount })),
  // Last, as compute() orders it: snapshotToday compares the two as JSON.
  version: json.version ?? 1,
});

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

  /**
   * Recommendation adoption's counts over the window [from, to) (docs/decisions.md "Recommendation
   * adoption: what was dealt with"). Counted: every finding open at some point in the window (raised
   * before its end and not resolved before its start, however old: an old open backlog counts against
   * it); adopted among them: the suppressed ones (a person decided) and those a scan resolved in the
   * window while still reading cost of their resource (still billed, no longer reported: dealt with).
   * A finding a scan resolved because its resource was no longer among the scan's resources
   * (`resolved_with_resource` false, or unknown for rows resolved before it was recorded) is counted
   * neither way: nobody can tell whether anyone acted. Null when nothing is counted and no scan of the
   * scope completed in the window: nothing was looked at. A scan that completed in the window with
   * nothing to count is measured: full marks.
   */
  async function findingCounts(
    scope: Scope,
    from: Date,
    to: Date,
  ): Promise<{ total: number; adopted: number } | null> {
    const { rows } = await db.query<{ total: number; adopted: number; scanned: boolean }>(
      `SELECT count(*)::int AS total,
         (count(*) FILTER (WHERE status <> 'open'))::int AS adopted,
         EXISTS (SELECT 1 FROM scans WHERE team_id = $1 AND ($2 = '' OR project_id = $2)
           AND status = 'completed' AND completed_at >= $3 AND completed_at < $4) AS scanned
       FROM findings WHERE team_id = $1 AND ($2 = '' OR project_id = $2) AND created_at < $4
         AND (status IN ('open', 'suppressed')
              OR (status = 'resolved' AND resolved_with_resource AND resolved_at >= $3 AND resolved_at < $4))`,
      [scope.teamId, scope.projectId, from, to],
    );
    const counts = rows[0];
    if (!counts || (counts.total === 0 && !counts.scanned)) return null;
    return { total: counts.total, adopted: counts.adopted };
  }

  async function compute(scope: Scope, day: string): Promise<Snapshot> {
    const from = new Date(`${addDays(day, 1 - WINDOW_DAYS)}T00:00:00Z`);
    const to = new Date(`${addDays(day, 1)}T00:00:00Z`);
    // Asked at once: a project that is not the team's rejects the whole with its 404.
    const [connectionIds, budgetCounts, requiredTags, findings] = await Promise.all([
      scope.projectId
        ? sources.projectConnections(scope.teamId, scope.projectId)
        : sources.teamConnections(scope.teamId),
      sources.budgetCounts(scope.teamId, scope.projectId || null),
      sources.requiredTags(scope.teamId),
      findingCounts(scope, from, to),
    ]);
    // No required tag, no connection or no taggable cost in the window: nothing to measure.
    const coverage =
      requiredTags.length === 0 || connectionIds.length === 0
        ? null
        : await sources.tagCoverage({ teamId: scope.teamId, connectionIds, requiredTags, from, to });
    const breakdown = breakdownOf({
      budgets: budgetCounts.active + budgetCounts.breached > 0 ? budgetCounts : null,
      tagCoverage: coverage?.measured ? coverage.ratio : null,
      findings,
    });
    return { breakdown, untaggableSpend: coverage?.untaggable ?? [], version: SCORING_VERSION };
  }

  async function snapshotOf(q: Queryable, scope: Scope, day: string): Promise<Snapshot | null> {
    const { rows } = await q.query<{ breakdown: SnapshotJson }>(
      `SELECT breakdown FROM posture_snapshots WHERE team_id = $1 AND project_id = $2 AND date = $3`,
      [scope.teamId, scope.projectId, day],
    );
    return rows[0] ? snapshotOfJson(rows[0].breakdown) : null;
  }

  async function store(scope: Scope, day: string, snapshot: Snapshot): Promise<void> {
    await db.query(
      `INSERT INTO posture_snapshots (team_id, project_id, date, score, breakdown, taken_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (team_id, project_id, date)
       DO UPDATE SET score = excluded.score, breakdown = excluded.breakdown, taken_at = excluded.taken_at`,
      [
        scope.teamId,
        scope.projectId,
        day,
        scoreOf(snapshot.breakdown),
        JSON.stringify({
          ...snapshot.breakdown,
          untaggableSpend: snapshot.untaggableSpend,
          version: snapshot.version,
        } satisfies SnapshotJson),
        now(),
      ],
    );
  }

  /**
   * Today's posture of a scope, computed and stored as today's snapshot; written only when it changed,
   * so frequent reads of a steady posture do not queue on the row.
   */
  async function snapshotToday(scope: Scope): Promise<Snapshot> {
    const today = dayOf(now());
    const [snapshot, stored] = await Promise.all([compute(scope, today), snapshotOf(db, scope, today)]);
    const same = stored !== null && JSON.stringify(stored) === JSON.stringify(snapshot);
    if (!same) await store(scope, today, snapshot);
    return snapshot;
  }

  return {
    async getCostPosture(teamId: string, asked: { projectId?: string; date?: string }): Promise<CostPosture> {
      const today = dayOf(now());
      const day = postureDay(asked.date ?? '', today);
      const scope = { teamId, projectId: asked.projectId ?? '' };
      const key = `${teamId}\u0000${scope.projectId}`;
      const hit = day === today && cacheMs > 0 ? cached.get(key) : undefined;
      if (hit && hit.posture.date === today && now().getTime() - hit.at < cacheMs) return hit.posture;
      let snapshot: Snapshot;
      if (day === today) snapshot = await snapshotToday(scope);
      else {
        // Another team's project must not learn whether it has history: ask budgets first.
        if (scope.projectId) await sources.projectConnections(teamId, scope.projectId);
        const stored = await snapshotOf(db, scope, day);
        if (!stored) throw new NotFoundError('Cost posture snapshot', day);
        snapshot = stored;
      }
      const { breakdown } = snapshot;
      const score = scoreOf(breakdown);
      const maxScore = maxScoreOf(breakdown);
      const earlier = await snapshotOf(db, scope, addDays(day, -7));
      const posture: CostPosture = {
        score,
        maxScore,
        grade: gradeOf(score, maxScore),
        breakdown,
        trend: trendOf(
          { score, maxScore, version: snapshot.version },
          earlier && {
            score: scoreOf(earlier.breakdown),
            maxScore: maxScoreOf(earlier.breakdown),
            version: earlier.version,
          },
        ),
        date: day,
        untaggableSpend: snapshot.untaggableSpend,
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
