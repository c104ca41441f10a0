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

/** The limit columns of a team and their bounds; the column names are also the API's field names. */
const limitColumns = [
  { column: 'api_requests_per_minute', max: 100_000_000 },
  { column: 'api_concurrent_requests', max: 10_000 },
  { column: 'scim_requests_per_minute', max: 100_000_000 },
  { column: 'scim_concurrent_requests', max: 10_000 },
] as const;

export type LimitColumn = (typeof limitColumns)[number]['column'];

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

  /** Limits given as undefined stay as they are; 0 restores the platform default. */
  async function setTeamLimits(id: string, limits: Partial<Record<LimitColumn, number>>): Promise<Team> {
    const violations = new Violations();
    const updates = limitColumns.flatMap(({ column, max }) => {
      const value = limits[column];
      if (value === undefined) return [];
      violations.check(
        Number.isInteger(value) && value >= 0 && value <= max,
        column,
        `must be a whole number from 0 to ${max}`,
      );
      return [{ column, value: value === 0 ? null : value }];
    });
    violations.throwIfAny();
    const sets = updates.map(({ column }, index) => `${column} = $${index + 2}`);
    const { rows } = await db.query<TeamRow>(
      sets.length > 0
        ? `UPDATE teams SET ${sets.join(', ')} WHERE id = $1 RETURNING *`
        : 'SELECT * FROM teams WHERE id = $1',
      [id, ...updates.map(({ value }) => value)],
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
