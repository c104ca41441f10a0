import { timestampDate } from '@bufbuild/protobuf/wkt';
import { identity } from '@costgov/contracts';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { CredentialKind, Principal } from './auth/principal';
import type { ApiKeys } from './keys/keys';
import type { ScimTokens } from './keys/scim-tokens';
import type { ScanCredits } from './teams/scan-credits';
import type { TeamSettings, TeamSettingsStore } from './teams/settings';
import type { Teams } from './teams/teams';
import type { ActiveUsers } from './users/active-users';

const teamMessage = messageWriter(identity.TeamSchema);
const keyMessage = messageWriter(identity.ApiKeySchema);
const scimTokenMessage = messageWriter(identity.ScimTokenSchema);
const creditsMessage = messageWriter(identity.ScanCreditsResponseSchema);

const kindMessage: Record<CredentialKind, identity.CredentialKind> = {
  api_key: identity.CredentialKind.API_KEY,
  scim_token: identity.CredentialKind.SCIM_TOKEN,
  oauth: identity.CredentialKind.OAUTH_TOKEN,
};

/** Team settings as the proto writes them: an unset minimum daily impact is absent, not null. */
const settingsMessage = ({ anomalyMinDailyImpact, ...rest }: TeamSettings) => ({
  ...rest,
  ...(anomalyMinDailyImpact === null ? {} : { anomalyMinDailyImpact }),
});

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
        principal: { ...principal, kind: kindMessage[principal.kind] },
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
    debitScanCredits: teamScoped(async (request, { teamId }) =>
      creditsMessage(await scanCredits.debit(teamId, request.scanId, Number(request.credits))),
    ),
    refundScanCredits: teamScoped(async (request, { teamId }) =>
      creditsMessage(await scanCredits.refund(teamId, request.scanId)),
    ),
    getTeamSettings: teamScoped(async (_request, { teamId }) =>
      settingsMessage(await settings.getSettings(teamId)),
    ),
    setRequiredTags: teamScoped(async (request, { teamId }) =>
      settingsMessage(await settings.setRequiredTags(teamId, request.requiredTags)),
    ),
    setAnomalyMinDailyImpact: teamScoped(async (request, { teamId }) =>
      settingsMessage(await settings.setAnomalyMinDailyImpact(teamId, request.anomalyMinDailyImpact)),
    ),
    createApiKey: teamScoped(async (request, { teamId }) => {
      const { key, secret } = await apiKeys.createApiKey(teamId, {
        name: request.name,
        scopes: request.scopes,
        expiresAt: request.expiresAt ? timestampDate(request.expiresAt) : undefined,
      });
      return { key: keyMessage(key), secret };
    }),
    listApiKeys: teamScoped(async (_request, { teamId }) => ({
      keys: (await apiKeys.listApiKeys(teamId)).map(keyMessage),
    })),
    revokeApiKey: teamScoped(async (request, { teamId }) =>
      keyMessage(await apiKeys.revokeApiKey(teamId, request.id)),
    ),
    createScimToken: teamScoped(async (request, { teamId }) => {
      const { token, secret } = await scimTokens.createScimToken(teamId, { name: request.name });
      return { token: scimTokenMessage(token), secret };
    }),
    listScimTokens: teamScoped(async (_request, { teamId }) => ({
      tokens: (await scimTokens.listScimTokens(teamId)).map(scimTokenMessage),
    })),
    revokeScimToken: teamScoped(async (request, { teamId }) =>
      scimTokenMessage(await scimTokens.revokeScimToken(teamId, request.id)),
    ),
    findActiveUsers: teamScoped(async (request, { teamId }) => ({
      userIds: await activeUsers.findActiveUsers(teamId, request.userIds),
    })),
  };
}
