import type { Db } from '@costgov/db';
import type { ApiKeys } from './keys/keys';
import type { Teams } from './teams/teams';

export interface BootstrapResult {
  teamId: string;
  /** The key's secret when it was generated here (to be shown once); undefined when it came from the environment. */
  generatedApiKey?: string;
  apiKeySource: 'environment' | 'generated';
}

/**
 * On first start with an empty database: team `default` on the enterprise plan with its first API key,
 * taken from GUARD_BOOTSTRAP_API_KEY when set. Runs in one transaction so a crash leaves nothing half-made;
 * two processes starting at once are serialised by the unique team name.
 */
export async function bootstrap(
  { db, teams, apiKeys }: { db: Db; teams: Teams; apiKeys: ApiKeys },
  bootstrapApiKey: string | undefined,
): Promise<BootstrapResult | undefined> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM teams');
  if (rows[0]!.n > 0) return undefined;
  try {
    return await db.transaction(async (tx) => {
      const team = await teams.createTeam({ name: 'default', plan: 'enterprise' }, tx);
      const { secret } = await apiKeys.createApiKey(
        team.id,
        { name: 'bootstrap', scopes: ['guard:read', 'guard:write'], secret: bootstrapApiKey },
        tx,
      );
      return bootstrapApiKey
        ? { teamId: team.id, apiKeySource: 'environment' as const }
        : { teamId: team.id, apiKeySource: 'generated' as const, generatedApiKey: secret };
    });
  } catch (error) {
    if ((error as { code?: string }).code === 'conflict') return undefined; // another process bootstrapped first
    throw error;
  }
}
