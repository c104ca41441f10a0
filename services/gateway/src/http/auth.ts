import { createHash } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { identity } from '@costgov/contracts';
import { ForbiddenError, UnauthenticatedError } from '@costgov/errors';
import { withLogContext } from '@costgov/log';
import type { RpcClient } from '@costgov/rpc';

export type CredentialKind = 'api_key' | 'scim_token' | 'oauth';

export interface Principal {
  teamId: string;
  credentialId: string;
  kind: CredentialKind;
  scopes: string[];
  plan: string;
  userId?: string;
  limits: { requestsPerMinute: number; concurrentRequests: number };
}

declare module 'express-serve-static-core' {
  interface Request {
    principal: Principal;
  }
}

interface CacheEntry {
  principal: Principal;
  expiresAt: number;
}

const maxCacheEntries = 10_000;

const kindOf: Partial<Record<identity.CredentialKind, CredentialKind>> = {
  [identity.CredentialKind.API_KEY]: 'api_key',
  [identity.CredentialKind.SCIM_TOKEN]: 'scim_token',
  [identity.CredentialKind.OAUTH_TOKEN]: 'oauth',
};

const challenge = (error?: string) => `Bearer realm="costgov"${error ? `, error="${error}"` : ''}`;

/**
 * Authenticates `Authorization: Bearer <credential>` through the identity service and caches the answer
 * briefly, keyed by a hash of the credential (never the credential itself). Revocations and deactivations
 * arrive as events and drop the cached answers at once; the TTL bounds the damage of a missed event.
 */
export function authenticator({
  identityClient,
  maxTtlMs,
  now = Date.now,
}: {
  identityClient: Pick<RpcClient<typeof identity.IdentityService>, 'authenticate'>;
  maxTtlMs: number;
  now?: () => number;
}) {
  const cache = new Map<string, CacheEntry>();

  async function principalOf(credential: string, requestId: string): Promise<Principal> {
    const key = createHash('sha256').update(credential).digest('hex');
    const hit = cache.get(key);
    if (hit && hit.expiresAt > now()) return hit.principal;
    cache.delete(key);
    const { principal, cacheTtlSeconds } = await identityClient.authenticate({ credential }, { requestId });
    const kind = principal && kindOf[principal.kind];
    if (!principal || !kind) throw new UnauthenticatedError();
    const result: Principal = {
      teamId: principal.teamId,
      credentialId: principal.credentialId,
      kind,
      scopes: principal.scopes,
      plan: principal.plan,
      userId: principal.userId || undefined,
      limits: {
        requestsPerMinute: principal.limits?.requestsPerMinute || 120,
        concurrentRequests: principal.limits?.concurrentRequests || 10,
      },
    };
    const ttl = Math.min(maxTtlMs, cacheTtlSeconds * 1000);
    if (ttl > 0) {
      if (cache.size >= maxCacheEntries) cache.delete(cache.keys().next().value!);
      cache.set(key, { principal: result, expiresAt: now() + ttl });
    }
    return result;
  }

  /** Requires a credential of one of `kinds`; any other kind is answered as if it were unknown. */
  function authenticate(kinds: CredentialKind[]): RequestHandler {
    return async (req, res, next) => {
      const header = req.get('authorization');
      const match = header?.match(/^Bearer ([\x21-\x7e]{1,4096})$/i);
      if (!match) {
        res.setHeader('WWW-Authenticate', challenge());
        throw new UnauthenticatedError(
          header ? 'The Authorization header is not a Bearer credential.' : 'Missing Authorization header.',
        );
      }
      try {
        req.principal = await principalOf(match[1]!, req.requestId);
        if (!kinds.includes(req.principal.kind))
          throw new UnauthenticatedError('This credential is not accepted on this API.');
      } catch (error) {
        if (error instanceof UnauthenticatedError)
          res.setHeader('WWW-Authenticate', challenge('invalid_token'));
        throw error;
      }
      withLogContext({ teamId: req.principal.teamId }, next);
    };
  }

  /** Drops cached answers for a credential (revoked) or for every token of a user (deactivated). */
  function forget(match: { credentialId?: string; userId?: string }): number {
    let dropped = 0;
    for (const [key, entry] of cache) {
      const { credentialId, userId } = entry.principal;
      if (
        (match.credentialId && credentialId === match.credentialId) ||
        (match.userId && userId === match.userId)
      ) {
        cache.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  return { authenticate, forget, clear: () => cache.clear() };
}

export type Authenticator = ReturnType<typeof authenticator>;

const readMethods = new Set(['GET', 'HEAD']);

/** The scopes an operation of the Guard API needs: read for GET, write otherwise, and scans:write to scan. */
export function scopesFor(req: Pick<Request, 'method' | 'path' | 'baseUrl'>): string[] {
  if (readMethods.has(req.method)) return ['guard:read'];
  const path = `${req.baseUrl}${req.path}`.replace(/\/$/, '');
  if (req.method === 'POST' && path === '/v1/guard/scans') return ['guard:write', 'scans:write'];
  return ['guard:write'];
}

export const requireGuardScopes: RequestHandler = (req, _res, next) => {
  const missing = scopesFor(req).filter((scope) => !req.principal.scopes.includes(scope));
  if (missing.length > 0) {
    throw new ForbiddenError(`This operation needs the ${missing.map((s) => `'${s}'`).join(' and ')} scope.`);
  }
  next();
};
