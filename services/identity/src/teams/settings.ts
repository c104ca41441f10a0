import type { Queryable } from '@costgov/db';
import { NotFoundError, Violations } from '@costgov/errors';

export interface TeamSettings {
  teamId: string;
  requiredTags: string[];
}

const maxRequiredTags = 50;

/** Team settings other services read: the tag keys every cost record of the team should carry. */
export function teamSettingsFactory({ db }: { db: Queryable }) {
  async function getSettings(teamId: string): Promise<TeamSettings> {
    const { rows } = await db.query<{ required_tags: string[] }>(
      'SELECT required_tags FROM teams WHERE id = $1',
      [teamId],
    );
    if (!rows[0]) throw new NotFoundError('Team', teamId);
    return { teamId, requiredTags: rows[0].required_tags };
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
    const { rows } = await db.query<{ required_tags: string[] }>(
      'UPDATE teams SET required_tags = $2 WHERE id = $1 RETURNING required_tags',
      [teamId, unique],
    );
    if (!rows[0]) throw new NotFoundError('Team', teamId);
    return { teamId, requiredTags: rows[0].required_tags };
  }

  return { getSettings, setRequiredTags };
}

export type TeamSettingsStore = ReturnType<typeof teamSettingsFactory>;
