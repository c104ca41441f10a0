import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { identity } from '@costgov/contracts';
import { ForbiddenError, UnauthenticatedError } from '@costgov/errors';
import { withLogContext } from '@costgov/log';
import type { RpcClient } from '@costgov/rpc';

export interface Principal {
  teamId: string;
  credentialId: string;
  scopes: string[];
  plan: string;
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

/**
 * Authenticates `Authorization: Bearer <credential>` through the identity service and caches the answer
 * briefly (keyed by a hash of the credential, never the credential itself).
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
    if (!principal) throw new UnauthenticatedError();
    const result = {
      teamId: principal.teamId,
      credentialId: principal.credentialId,
      scopes: principal.scopes,
      plan: principal.plan,
    };
    const ttl = Math.min(maxTtlMs, cacheTtlSeconds * 1000);
    if (ttl > 0) {
      if (cache.size >= maxCacheEntries) cache.delete(cache.keys().next().value!);
      cache.set(key, { principal: result, expiresAt: now() + ttl });
    }
    return result;
  }

  const authenticate: RequestHandler = async (req, res, next) => {
    const header = req.get('authorization');
    const match = header?.match(/^Bearer ([\x21-\x7e]{1,4096})$/i);
    if (!match) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="costgov"');
      throw new UnauthenticatedError(
        header ? 'The Authorization header is not a Bearer credential.' : 'Missing Authorization header.',
      );
    }
    try {
      req.principal = await principalOf(match[1]!, req.requestId);
    } catch (error) {
      if (error instanceof UnauthenticatedError)
        res.setHeader('WWW-Authenticate', 'Bearer realm="costgov", error="invalid_token"');
      throw error;
    }
    withLogContext({ teamId: req.principal.teamId }, next);
  };

  return { authenticate, clear: () => cache.clear() };
}

/** GET needs `guard:read`; every other method `guard:write`. */
export const requireGuardScope: RequestHandler = (req, _res, next) => {
  const needed = req.method === 'GET' || req.method === 'HEAD' ? 'guard:read' : 'guard:write';
  if (!req.principal.scopes.includes(needed))
    throw new ForbiddenError(`This operation needs the '${needed}' scope.`);
  next();
};
