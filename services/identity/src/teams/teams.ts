import type { Queryable } from '@costgov/db';
import { ConflictError, Violations } from '@costgov/errors';
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
}

interface TeamRow {
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
});

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

  async function getTeam(id: string): Promise<Team | undefined> {
    const { rows } = await db.query<TeamRow>('SELECT * FROM teams WHERE id = $1', [id]);
    return rows[0] && toTeam(rows[0]);
  }

  return { createTeam, listTeams, getTeam };
}

export type Teams = ReturnType<typeof teamsFactory>;
