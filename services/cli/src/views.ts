import type { components } from '@costgov/client';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { costs, identity } from '@costgov/contracts';

/**
 * What the CLI shows of each resource: plain objects, timestamps as ISO strings (null when unset) and
 * int64 as numbers, so `--json` prints them as they are and the human output formats the same values.
 */
export interface LimitsView {
  requestsPerMinute: number;
  concurrentRequests: number;
}

export interface TeamView {
  id: string;
  name: string;
  plan: string;
  defaultRole: string;
  scanCredits: number;
  createdAt: string | null;
  apiLimits: LimitsView;
  scimLimits: LimitsView;
}

export type CredentialStatus = 'active' | 'revoked' | 'expired';

export interface ApiKeyView {
  id: string;
  teamId: string;
  name: string;
  scopes: string[];
  prefix: string;
  status: CredentialStatus;
  createdAt: string | null;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface ScimTokenView {
  id: string;
  teamId: string;
  name: string;
  prefix: string;
  status: CredentialStatus;
  createdAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const iso = (timestamp: Timestamp | undefined): string | null =>
  timestamp ? timestampDate(timestamp).toISOString() : null;

const limitsView = (limits: identity.RequestLimits | undefined): LimitsView => ({
  requestsPerMinute: limits?.requestsPerMinute ?? 0,
  concurrentRequests: limits?.concurrentRequests ?? 0,
});

function statusOf(credential: { revokedAt?: Timestamp; expiresAt?: Timestamp }, now: Date): CredentialStatus {
  if (credential.revokedAt) return 'revoked';
  if (credential.expiresAt && timestampDate(credential.expiresAt) <= now) return 'expired';
  return 'active';
}

export const teamView = (team: identity.Team): TeamView => ({
  id: team.id,
  name: team.name,
  plan: team.plan,
  defaultRole: team.defaultRole,
  scanCredits: Number(team.scanCredits),
  createdAt: iso(team.createdAt),
  apiLimits: limitsView(team.apiLimits),
  scimLimits: limitsView(team.scimLimits),
});

export const apiKeyView = (key: identity.ApiKey, now: Date): ApiKeyView => ({
  id: key.id,
  teamId: key.teamId,
  name: key.name,
  scopes: key.scopes,
  prefix: key.prefix,
  status: statusOf(key, now),
  createdAt: iso(key.createdAt),
  expiresAt: iso(key.expiresAt),
  lastUsedAt: iso(key.lastUsedAt),
  revokedAt: iso(key.revokedAt),
});

export const scimTokenView = (token: identity.ScimToken, now: Date): ScimTokenView => ({
  id: token.id,
  teamId: token.teamId,
  name: token.name,
  prefix: token.prefix,
  status: statusOf(token, now),
  createdAt: iso(token.createdAt),
  lastUsedAt: iso(token.lastUsedAt),
  revokedAt: iso(token.revokedAt),
});

/** A connection as the REST API answers it (snake_case, as in the OpenAPI document). */
/** A connection as the REST API sends it. */
export type ConnectionJson = components['schemas']['Connection'];

export interface ConnectionView {
  id: string;
  name: string;
  provider: string;
  status: string;
  lastIngestedAt: string | null;
  createdAt: string | null;
  updatedAt: string | null;
}

export const connectionView = (c: ConnectionJson): ConnectionView => ({
  id: c.id,
  name: c.name,
  provider: c.provider,
  status: c.status,
  lastIngestedAt: c.last_ingested_at,
  createdAt: c.created_at,
  updatedAt: c.updated_at,
});

export interface RateView {
  fromCurrency: string;
  toCurrency: string;
  rate: number;
  updatedAt: string | null;
}

export const rateView = (rate: costs.Rate): RateView => ({
  fromCurrency: rate.fromCurrency,
  toCurrency: rate.toCurrency,
  rate: rate.rate,
  updatedAt: iso(rate.updatedAt),
});
