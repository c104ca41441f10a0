import type { Queryable } from '@costgov/db';
import { NotFoundError, Violations } from '@costgov/errors';

export interface TeamSettings {
  teamId: string;
  requiredTags: string[];
  /** Minimum daily impact of an anomaly; null: the scanner's default. */
  anomalyMinDailyImpact: number | null;
}

const maxRequiredTags = 50;
const maxMinDailyImpact = 1e9;

interface SettingsRow {
  required_tags: string[];
  anomaly_min_daily_impact: number | null;
}

const settingsOf = (teamId: string, row: SettingsRow): TeamSettings => ({
  teamId,
  requiredTags: row.required_tags,
  anomalyMinDailyImpact: row.anomaly_min_daily_impact === null ? null : Number(row.anomaly_min_daily_impact),
});

/** Team settings other services read: the tag keys every cost record of the team should carry. */
export function teamSettingsFactory({ db }: { db: Queryable }) {
  async function getSettings(teamId: string): Promise<TeamSettings> {
    const { rows } = await db.query<SettingsRow>(
      'SELECT required_tags, anomaly_min_daily_impact FROM teams WHERE id = $1',
      [teamId],
    );
    if (!rows[0]) throw new NotFoundError('Team', teamId);
    return settingsOf(teamId, rows[0]);
  }

  async function setRequiredTags(teamId: string, tags: string[]): Promise<TeamSettings> {
    const violations = new Violations().check(
      tags.length <= maxRequiredTags,
      'required_tags',
      `must hold at most ${maxRequiredTags} keys`,
    );
    tags.forEach((tag, i) =>
      violations.check(
        tag.trim().length >= 1 && tag.length <= 128 && tag.trim() === tag,
        `required_tags[${i}]`,
        'must be 1 to 128 characters without surrounding spaces',
      ),
    );
    violations.throwIfAny();
    const unique = [...new Set(tags)];
    const { rows } = await db.query<SettingsRow>(
      'UPDATE teams SET required_tags = $2 WHERE id = $1 RETURNING required_tags, anomaly_min_daily_impact',
      [teamId, unique],
    );
    if (!rows[0]) throw new NotFoundError('Team', teamId);
    return settingsOf(teamId, rows[0]);
  }

  /** Sets the minimum daily impact of an anomaly; undefined restores the scanner's default. */
  async function setAnomalyMinDailyImpact(teamId: string, amount: number | undefined): Promise<TeamSettings> {
    new Violations()
      .check(
        amount === undefined || (Number.isFinite(amount) && amount >= 0 && amount <= maxMinDailyImpact),
        'anomaly_min_daily_impact',
        `must be a number from 0 to ${maxMinDailyImpact}`,
      )
      .throwIfAny();
    const { rows } = await db.query<SettingsRow>(
      `UPDATE teams SET anomaly_min_daily_impact = $2 WHERE id = $1
       RETURNING required_tags, anomaly_min_daily_impact`,
      [teamId, amount ?? null],
    );
    if (!rows[0]) throw new NotFoundError('Team', teamId);
    return settingsOf(teamId, rows[0]);
  }

  return { getSettings, setRequiredTags, setAnomalyMinDailyImpact };
}

export type TeamSettingsStore = ReturnType<typeof teamSettingsFactory>;
