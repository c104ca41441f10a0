export interface RequestLimits {
  requestsPerMinute: number;
  concurrentRequests: number;
}

/** Platform defaults: the spec's Guard limits, and the design's own for SCIM. */
export const defaultApiLimits: RequestLimits = { requestsPerMinute: 120, concurrentRequests: 10 };
export const defaultScimLimits: RequestLimits = { requestsPerMinute: 600, concurrentRequests: 20 };

export type CredentialKind = 'api_key' | 'scim_token' | 'oauth';

/** Who a request acts as: a team, through one credential, with its scopes and limits. */
export interface Principal {
  teamId: string;
  credentialId: string;
  kind: CredentialKind;
  scopes: string[];
  plan: string;
  /** The SCIM user behind an OAuth token. */
  userId?: string;
  limits: RequestLimits;
  /** How long this answer may be cached, at most. */
  cacheTtlSeconds: number;
}

/** How long the gateway may cache an authentication answer; bounds how late a missed revocation is seen. */
export const authCacheTtlSeconds = 30;

export interface TeamLimitColumns {
  plan: string;
  api_requests_per_minute: number | null;
  api_concurrent_requests: number | null;
  scim_requests_per_minute: number | null;
  scim_concurrent_requests: number | null;
}

export const apiLimitsOf = (team: TeamLimitColumns): RequestLimits => ({
  requestsPerMinute: team.api_requests_per_minute ?? defaultApiLimits.requestsPerMinute,
  concurrentRequests: team.api_concurrent_requests ?? defaultApiLimits.concurrentRequests,
});

export const scimLimitsOf = (team: TeamLimitColumns): RequestLimits => ({
  requestsPerMinute: team.scim_requests_per_minute ?? defaultScimLimits.requestsPerMinute,
  concurrentRequests: team.scim_concurrent_requests ?? defaultScimLimits.concurrentRequests,
});
