import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { identity } from '@costgov/contracts';
import { BadRequestError, UnauthenticatedError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import { apiKeyPrefix } from './keys/secrets';
import type { ApiKey, ApiKeys } from './keys/keys';
import type { Team, Teams } from './teams/teams';

/** How long the gateway may cache an authentication answer; bounds how late a revocation can be seen. */
export const authCacheTtlSeconds = 30;

const teamMessage = (team: Team) => ({
  id: team.id,
  name: team.name,
  plan: team.plan,
  defaultRole: team.defaultRole,
  scanCredits: BigInt(team.scanCredits),
  createdAt: timestampFromDate(team.createdAt),
});

const keyMessage = (key: ApiKey) => ({
  id: key.id,
  teamId: key.teamId,
  name: key.name,
  scopes: key.scopes,
  prefix: key.prefix,
  createdAt: timestampFromDate(key.createdAt),
  expiresAt: key.expiresAt ? timestampFromDate(key.expiresAt) : undefined,
  lastUsedAt: key.lastUsedAt ? timestampFromDate(key.lastUsedAt) : undefined,
  revokedAt: key.revokedAt ? timestampFromDate(key.revokedAt) : undefined,
});

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

export function identityRpc({
  teams,
  apiKeys,
}: {
  teams: Teams;
  apiKeys: ApiKeys;
}): ServiceImpl<typeof identity.IdentityService> {
  return {
    async authenticate({ credential }) {
      if (!credential.startsWith(apiKeyPrefix)) throw new UnauthenticatedError();
      const principal = await apiKeys.authenticateApiKey(credential);
      return {
        principal: {
          teamId: principal.teamId,
          credentialId: principal.credentialId,
          kind: identity.CredentialKind.API_KEY,
          scopes: principal.scopes,
          plan: principal.plan,
        },
        cacheTtlSeconds: authCacheTtlSeconds,
      };
    },
    async createTeam(request) {
      return teamMessage(await teams.createTeam({ name: request.name, plan: request.plan }));
    },
    async listTeams() {
      return { teams: (await teams.listTeams()).map(teamMessage) };
    },
    async createApiKey(request, ctx) {
      const { key, secret } = await apiKeys.createApiKey(teamOf(ctx), {
        name: request.name,
        scopes: request.scopes,
        expiresAt: request.expiresAt ? timestampDate(request.expiresAt) : undefined,
      });
      return { key: keyMessage(key), secret };
    },
    async listApiKeys(_request, ctx) {
      return { keys: (await apiKeys.listApiKeys(teamOf(ctx))).map(keyMessage) };
    },
  };
}
