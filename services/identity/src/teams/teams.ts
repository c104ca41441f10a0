import type { Queryable } from '@costgov/db';
import { ConflictError, NotFoundError, Violations } from '@costgov/errors';
import { apiLimitsOf, scimLimitsOf, type RequestLimits, type TeamLimitColumns } from '../auth/principal';
import type { IdGenerator } from '@costgov/ids';

export const plans = ['free', 'team', 'enterprise'] as const;
export type Plan = (typeof plans)[number];

export interface Team {
  id: string;
  name: string;
  plan: Plan;
  defaultRole: string;
  scanCredits: number;
  createdAt: Date;
  apiLimits: RequestLimits;
  scimLimits: RequestLimits;
}

interface TeamRow extends TeamLimitColumns {
  id: string;
  name: string;
  plan: Plan;
  default_role: string;
  scan_credits: number;
  created_at: Date;
}

const toTeam = (row: TeamRow): Team => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  defaultRole: row.default_role,
  scanCredits: row.scan_credits,
  createdAt: row.created_at,
  apiLimits: apiLimitsOf(row),
  scimLimits: scimLimitsOf(row),
});

/** 0 (or absent) restores the default; otherwise a positive whole number within sane bounds. */
function checkLimit(
  violations: Violations,
  field: string,
  value: number | undefined,
  max: number,
): number | null {
  if (!value) return null;
  violations.check(
    Number.isInteger(value) && value > 0 && value <= max,
    field,
    `must be a whole number from 1 to ${max}`,
  );
  return value;
}

export interface CreateTeamInput {
  name: string;
  plan?: string;
}

export function teamsFactory({ db, newId }: { db: Queryable; newId: IdGenerator }) {
  async function createTeam(input: CreateTeamInput, tx: Queryable = db): Promise<Team> {
    const name = input.name.trim();
    const plan = input.plan || 'team';
    new Violations()
      .check(name.length >= 1 && name.length <= 100, 'name', 'must be 1 to 100 characters')
      .check((plans as readonly string[]).includes(plan), 'plan', `must be one of ${plans.join(', ')}`)
      .throwIfAny();
    try {
      const { rows } = await tx.query<TeamRow>(
        'INSERT INTO teams (id, name, plan) VALUES ($1, $2, $3) RETURNING *',
        [newId('team'), name, plan],
      );
      return toTeam(rows[0]!);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') {
        throw new ConflictError(`A team named '${name}' already exists.`, [
          { field: 'name', message: 'is taken' },
        ]);
      }
      throw error;
    }
  }

  async function listTeams(): Promise<Team[]> {
    const { rows } = await db.query<TeamRow>('SELECT * FROM teams ORDER BY created_at, id');
    return rows.map(toTeam);
  }

  async function getTeam(id: string): Promise<Team> {
    const { rows } = await db.query<TeamRow>('SELECT * FROM teams WHERE id = $1', [id]);
    if (!rows[0]) throw new NotFoundError('Team', id);
    return toTeam(rows[0]);
  }

  async function setTeamLimits(
    id: string,
    limits: { api?: Partial<RequestLimits>; scim?: Partial<RequestLimits> },
  ): Promise<Team> {
    const violations = new Violations();
    const values = [
      checkLimit(violations, 'api_limits.requests_per_minute', limits.api?.requestsPerMinute, 100_000),
      checkLimit(violations, 'api_limits.concurrent_requests', limits.api?.concurrentRequests, 1_000),
      checkLimit(violations, 'scim_limits.requests_per_minute', limits.scim?.requestsPerMinute, 100_000),
      checkLimit(violations, 'scim_limits.concurrent_requests', limits.scim?.concurrentRequests, 1_000),
    ];
    violations.throwIfAny();
    const { rows } = await db.query<TeamRow>(
      `UPDATE teams SET api_requests_per_minute = $2, api_concurrent_requests = $3,
         scim_requests_per_minute = $4, scim_concurrent_requests = $5 WHERE id = $1 RETURNING *`,
      [id, ...values],
    );
    if (!rows[0]) throw new NotFoundError('Team', id);
    return toTeam(rows[0]);
  }

  async function grantScanCredits(id: string, credits: number): Promise<Team> {
    new Violations()
      .check(
        Number.isInteger(credits) && credits > 0 && credits <= 1_000_000,
        'credits',
        'must be a whole number from 1 to 1000000',
      )
      .throwIfAny();
    const { rows } = await db.query<TeamRow>(
      'UPDATE teams SET scan_credits = scan_credits + $2 WHERE id = $1 RETURNING *',
      [id, credits],
    );
    if (!rows[0]) throw new NotFoundError('Team', id);
    return toTeam(rows[0]);
  }

  return { createTeam, listTeams, getTeam, setTeamLimits, grantScanCredits };
}

export type Teams = ReturnType<typeof teamsFactory>;
