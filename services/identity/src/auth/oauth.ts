import {
  createRemoteJWKSet,
  errors as joseErrors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { Queryable } from '@costgov/db';
import { UnauthenticatedError } from '@costgov/errors';
import type { Logger } from '@costgov/log';
import type { IdentityConfig } from '../config';
import { scopes as knownScopes } from '../keys/keys';
import { apiLimitsOf, authCacheTtlSeconds, type Principal, type TeamLimitColumns } from './principal';

export interface OAuthConfig {
  issuer: string;
  audience: string;
  jwksUrl: string;
  algorithms: string[];
  clockToleranceSeconds: number;
}

/** The OAUTH_* variables; without OAUTH_ISSUER and OAUTH_AUDIENCE, bearer JWTs are not accepted at all. */
export function oauthConfigFrom(config: IdentityConfig): OAuthConfig | undefined {
  const issuer = config.OAUTH_ISSUER;
  const audience = config.OAUTH_AUDIENCE;
  if (!issuer || !audience) return undefined;
  return {
    issuer,
    audience,
    jwksUrl: config.OAUTH_JWKS_URL ?? `${issuer.replace(/\/$/, '')}/.well-known/jwks.json`,
    algorithms: config.OAUTH_ALGORITHMS,
    clockToleranceSeconds: config.OAUTH_CLOCK_SKEW_SECONDS,
  };
}

export const looksLikeJwt = (credential: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(credential);

interface UserMatch extends TeamLimitColumns {
  id: string;
  team_id: string;
  active: boolean;
}

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Verifies a JWT against the configured issuer's JWKS (issuer, audience, algorithms, clock skew) and maps
 * it to a SCIM user: `sub` as the user's id or externalId, otherwise the `email` claim as its userName or
 * an e-mail. A `team_id` claim narrows the match to one team. Unknown, ambiguous or deactivated: 401;
 * a user deleted over SCIM is unknown (a new user may hold their userName).
 */
export function oauthVerifier({
  config,
  db,
  logger,
  now,
  keys = createRemoteJWKSet(new URL(config.jwksUrl), { cooldownDuration: 30_000, cacheMaxAge: 600_000 }),
}: {
  config: OAuthConfig;
  db: Queryable;
  logger: Logger;
  now: () => Date;
  keys?: JWTVerifyGetKey;
}) {
  async function verify(token: string): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: config.issuer,
        audience: config.audience,
        algorithms: config.algorithms,
        clockTolerance: config.clockToleranceSeconds,
        currentDate: now(),
        requiredClaims: ['exp', 'sub'],
      });
      return payload;
    } catch (error) {
      if (!(error instanceof joseErrors.JOSEError)) throw error;
      logger.debug({ reason: error.code }, 'OAuth token refused');
      throw new UnauthenticatedError('The OAuth token is invalid or expired.');
    }
  }

  async function userOf(claims: JWTPayload): Promise<UserMatch> {
    const teamId = typeof claims.team_id === 'string' ? claims.team_id : null;
    const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : null;
    const sub = claims.sub!;
    const { rows } = await db.query<UserMatch>(
      `SELECT u.id::text AS id, u.team_id, u.active, t.plan, t.api_requests_per_minute, t.api_concurrent_requests,
         t.scim_requests_per_minute, t.scim_concurrent_requests
       FROM scim_users u JOIN teams t ON t.id = u.team_id
       WHERE ($1::text IS NULL OR u.team_id = $1) AND u.deleted_at IS NULL
         AND (($2::uuid IS NOT NULL AND u.id = $2::uuid) OR u.external_id = $3
           OR ($4::text IS NOT NULL AND (lower(u.user_name) = $4 OR u.emails @> jsonb_build_array(jsonb_build_object('value', $4::text)))))
       LIMIT 2`,
      [teamId, uuidShape.test(sub) ? sub : null, sub, email],
    );
    if (rows.length !== 1)
      throw new UnauthenticatedError('The OAuth token does not belong to a user of this service.');
    const user = rows[0]!;
    if (!user.active) throw new UnauthenticatedError('The user is deactivated.');
    return user;
  }

  async function authenticateOAuthToken(token: string): Promise<Principal> {
    const claims = await verify(token);
    const user = await userOf(claims);
    const granted = [
      ...(typeof claims.scope === 'string' ? claims.scope.split(' ') : []),
      ...(Array.isArray(claims.scp) ? claims.scp.filter((s): s is string => typeof s === 'string') : []),
    ];
    const secondsLeft = Math.floor((claims.exp ?? 0) - now().getTime() / 1000);
    return {
      teamId: user.team_id,
      // Limits apply per user, whichever of their tokens they use.
      credentialId: `user:${user.id}`,
      kind: 'oauth',
      scopes: (knownScopes as readonly string[]).filter((scope) => granted.includes(scope)),
      plan: user.plan,
      userId: user.id,
      limits: apiLimitsOf(user),
      cacheTtlSeconds: Math.max(0, Math.min(authCacheTtlSeconds, secondsLeft)),
    };
  }

  return { authenticateOAuthToken };
}

export type OAuthVerifier = ReturnType<typeof oauthVerifier>;
