import type { Db } from '@costgov/db';
import type { ApiKeys } from './keys/keys';
import type { Teams } from './teams/teams';

export interface BootstrapResult {
  teamId: string;
  /** The key's secret when it was generated here (to be shown once); undefined when it came from the environment. */
  generatedApiKey?: string;
  apiKeySource: 'environment' | 'generated';
}

/** Values shipped in this repository's deploy files: whoever read them could use them as a key. */
export const placeholderBootstrapKeys: readonly string[] = [
  'cg_live_CHANGE_ME_CHANGE_ME_CHANGE_ME_CHANGE_ME', // deploy/k8s/secret.yaml
  'cg_live_devonlyNotASecret0000000000000000', // the compose default of earlier versions
];

const keyFormat = /^cg_live_[0-9A-Za-z]{32,}$/;
const placeholderWords = /change_?me|not_?a_?secret|placeholder|example|your_?key/i;

/**
 * Why GUARD_BOOTSTRAP_API_KEY cannot be the first key of an enterprise team, or undefined when it can:
 * it must look like a real key (`cg_live_` and 32 or more letters and digits) and not be a placeholder.
 */
export function bootstrapKeyProblem(value: string): string | undefined {
  const make =
    'set a key of your own, e.g. cg_live_$(openssl rand -hex 20), or leave it unset to have one generated';
  if (placeholderBootstrapKeys.includes(value) || placeholderWords.test(value))
    return `GUARD_BOOTSTRAP_API_KEY is a placeholder from the deploy files, not a secret: ${make}.`;
  if (!keyFormat.test(value))
    return `GUARD_BOOTSTRAP_API_KEY must be cg_live_ followed by at least 32 letters and digits: ${make}.`;
  return undefined;
}

/**
 * On first start with an empty database: team `default` on the enterprise plan with its first API key,
 * taken from GUARD_BOOTSTRAP_API_KEY when set. Runs in one transaction so a crash leaves nothing half-made;
 * two processes starting at once are serialised by the unique team name. A placeholder key never gets
 * here: identity's configuration refuses it at every start (config.ts), not only the first.
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
        { name: 'bootstrap', scopes: ['guard:read', 'guard:write', 'scans:write'], secret: bootstrapApiKey },
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
