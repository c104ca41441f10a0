import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { identity } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { CredentialKind, Principal } from './auth/principal';
import type { ApiKey, ApiKeys } from './keys/keys';
import type { ScimToken, ScimTokens } from './keys/scim-tokens';
import type { ScanCredits } from './teams/scan-credits';
import type { TeamSettingsStore } from './teams/settings';
import type { Team, Teams } from './teams/teams';
import type { ActiveUsers } from './users/active-users';

const ts = (date: Date | null) => (date ? timestampFromDate(date) : undefined);

const teamMessage = (team: Team) => ({
  id: team.id,
  name: team.name,
  plan: team.plan,
  defaultRole: team.defaultRole,
  scanCredits: BigInt(team.scanCredits),
  createdAt: timestampFromDate(team.createdAt),
  apiLimits: team.apiLimits,
  scimLimits: team.scimLimits,
});

const keyMessage = (key: ApiKey) => ({
  id: key.id,
  teamId: key.teamId,
  name: key.name,
  scopes: key.scopes,
  prefix: key.prefix,
  createdAt: timestampFromDate(key.createdAt),
  expiresAt: ts(key.expiresAt),
  lastUsedAt: ts(key.lastUsedAt),
  revokedAt: ts(key.revokedAt),
});

const scimTokenMessage = (token: ScimToken) => ({
  id: token.id,
  teamId: token.teamId,
  name: token.name,
  prefix: token.prefix,
  createdAt: timestampFromDate(token.createdAt),
  lastUsedAt: ts(token.lastUsedAt),
  revokedAt: ts(token.revokedAt),
});

const kindMessage: Record<CredentialKind, identity.CredentialKind> = {
  api_key: identity.CredentialKind.API_KEY,
  scim_token: identity.CredentialKind.SCIM_TOKEN,
  oauth: identity.CredentialKind.OAUTH_TOKEN,
};

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

export function identityRpc({
  teams,
  apiKeys,
  scimTokens,
  activeUsers,
  scanCredits,
  settings,
  authenticate,
}: {
  teams: Teams;
  apiKeys: ApiKeys;
  scimTokens: ScimTokens;
  activeUsers: ActiveUsers;
  scanCredits: ScanCredits;
  settings: TeamSettingsStore;
  authenticate: (credential: string) => Promise<Principal>;
}): ServiceImpl<typeof identity.IdentityService> {
  return {
    async authenticate({ credential }) {
      const principal = await authenticate(credential);
      return {
        principal: {
          teamId: principal.teamId,
          credentialId: principal.credentialId,
          kind: kindMessage[principal.kind],
          scopes: principal.scopes,
          plan: principal.plan,
          userId: principal.userId ?? '',
          limits: principal.limits,
        },
        cacheTtlSeconds: principal.cacheTtlSeconds,
      };
    },
    async createTeam(request) {
      return teamMessage(await teams.createTeam({ name: request.name, plan: request.plan }));
    },
    async listTeams() {
      return { teams: (await teams.listTeams()).map(teamMessage) };
    },
    async getTeam(request) {
      return teamMessage(await teams.getTeam(request.id));
    },
    async setTeamLimits(request) {
      return teamMessage(
        await teams.setTeamLimits(request.teamId, {
          api_requests_per_minute: request.apiRequestsPerMinute,
          api_concurrent_requests: request.apiConcurrentRequests,
          scim_requests_per_minute: request.scimRequestsPerMinute,
          scim_concurrent_requests: request.scimConcurrentRequests,
        }),
      );
    },
    async grantScanCredits(request) {
      return teamMessage(await teams.grantScanCredits(request.teamId, Number(request.credits)));
    },
    async debitScanCredits(request, ctx) {
      const result = await scanCredits.debit(teamOf(ctx), request.scanId, Number(request.credits));
      return { balance: BigInt(result.balance), applied: result.applied };
    },
    async refundScanCredits(request, ctx) {
      const result = await scanCredits.refund(teamOf(ctx), request.scanId);
      return { balance: BigInt(result.balance), applied: result.applied };
    },
    async getTeamSettings(_request, ctx) {
      return settings.getSettings(teamOf(ctx));
    },
    async setRequiredTags(request, ctx) {
      return settings.setRequiredTags(teamOf(ctx), request.requiredTags);
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
    async revokeApiKey(request, ctx) {
      return keyMessage(await apiKeys.revokeApiKey(teamOf(ctx), request.id));
    },
    async createScimToken(request, ctx) {
      const { token, secret } = await scimTokens.createScimToken(teamOf(ctx), { name: request.name });
      return { token: scimTokenMessage(token), secret };
    },
    async listScimTokens(_request, ctx) {
      return { tokens: (await scimTokens.listScimTokens(teamOf(ctx))).map(scimTokenMessage) };
    },
    async revokeScimToken(request, ctx) {
      return scimTokenMessage(await scimTokens.revokeScimToken(teamOf(ctx), request.id));
    },
    async findActiveUsers(request, ctx) {
      return { userIds: await activeUsers.findActiveUsers(teamOf(ctx), request.userIds) };
    },
  };
}
