import { hash } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { identity } from '@costgov/contracts';
import { DomainError, ForbiddenError, UnauthenticatedError } from '@costgov/errors';
import { addLogContext } from '@costgov/log';
import type { LimitPolicy, RateLimiter } from '@costgov/ratelimit';
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

/** A limit on failed authentications per client address, through the same limiter as the rate limits. */
export interface FailureLimit {
  limiter: RateLimiter;
  perMinute: number;
}

/** Sets `key` last in a bounded map (its insertion order is the LRU order), evicting the oldest. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= maxCacheEntries) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/** Only a look-up needs it: express's `req.ip` parses X-Forwarded-For against `trust proxy` each time. */
const clientAddress = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';

const unknownCredential = (): never => {
  throw new UnauthenticatedError();
};

const tooManyFailures = (retryAfterSeconds: number) =>
  new DomainError(
    'rate_limited',
    `Too many failed authentications from this address; retry after ${retryAfterSeconds} s.`,
    [],
    { retryAfterSeconds: String(retryAfterSeconds) },
  );

/**
 * Authenticates `Authorization: Bearer <credential>` through the identity service and caches the answer
 * briefly, keyed by a hash of the credential (never the credential itself). Revocations and deactivations
 * arrive as events and drop the cached answers at once; the TTL bounds the damage of a missed event.
 * Unknown credentials are remembered for `negativeTtlMs` (repeats cost nothing and are not counted),
 * and a client address whose credentials identity found unknown more than `failures.perMinute` times a
 * minute is answered 429 without asking identity, so guessing costs the guesser, not identity and its
 * database. Credentials already in the cache pass even then.
 */
export function authenticator({
  identityClient,
  maxTtlMs,
  negativeTtlMs = 0,
  failures,
  now = Date.now,
}: {
  identityClient: Pick<RpcClient<typeof identity.IdentityService>, 'authenticate'>;
  maxTtlMs: number;
  negativeTtlMs?: number;
  failures?: FailureLimit;
  now?: () => number;
}) {
  const cache = new Map<string, CacheEntry>();
  /** Credential hash -> until when it is known to be unknown. */
  const unknown = new Map<string, number>();
  /** Client address -> until when its failures are refused without a look-up. */
  const blocked = new Map<string, number>();
  const failurePolicy: LimitPolicy | undefined = failures && {
    name: 'auth-failures',
    capacity: failures.perMinute,
    refillPerSecond: failures.perMinute / 60,
    concurrency: failures.perMinute,
  };

  function cached(key: string): Principal | undefined {
    const hit = cache.get(key);
    if (hit && hit.expiresAt > now()) return hit.principal;
    cache.delete(key);
    return undefined;
  }

  function knownUnknown(key: string): boolean {
    const until = unknown.get(key);
    if (until !== undefined && until > now()) return true;
    unknown.delete(key);
    return false;
  }

  /** Asks identity; an unknown credential is remembered, and counted against the client's address. */
  async function lookUp(
    key: string,
    credential: string,
    requestId: string,
    address: string,
  ): Promise<Principal> {
    checkBlocked(address);
    let answer: identity.AuthenticateResponse;
    try {
      answer = await identityClient.authenticate({ credential }, { requestId });
    } catch (error) {
      if (!(error instanceof UnauthenticatedError)) throw error;
      if (negativeTtlMs > 0) remember(unknown, key, now() + negativeTtlMs);
      await countFailure(address);
      throw error;
    }
    const { principal, cacheTtlSeconds } = answer;
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
    if (ttl > 0) remember(cache, key, { principal: result, expiresAt: now() + ttl });
    return result;
  }

  /** Refuses an address whose failure budget is spent, before any look-up. */
  function checkBlocked(address: string): void {
    const until = blocked.get(address);
    if (until === undefined) return;
    if (until > now()) throw tooManyFailures(Math.max(1, Math.ceil((until - now()) / 1000)));
    blocked.delete(address);
  }

  /** Counts a failure of `address`; the one that exceeds its budget is answered 429 instead of 401. */
  async function countFailure(address: string): Promise<void> {
    if (!failures || !failurePolicy) return;
    const { decision, lease } = await failures.limiter
      .acquire(`address:${address}`, failurePolicy)
      // The limiter must not turn a 401 into a 500; an uncounted failure is the lesser harm.
      .catch(() => ({ decision: { allowed: true, retryAfterSeconds: 0 }, lease: undefined }));
    void lease?.release();
    if (decision.allowed) return;
    const retryAfterSeconds = Math.max(1, decision.retryAfterSeconds ?? 1);
    remember(blocked, address, now() + retryAfterSeconds * 1000);
    throw tooManyFailures(retryAfterSeconds);
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
      const credential = match[1]!;
      const key = hash('sha256', credential);
      try {
        const principal =
          cached(key) ??
          (knownUnknown(key)
            ? unknownCredential()
            : await lookUp(key, credential, req.requestId, clientAddress(req)));
        if (!kinds.includes(principal.kind))
          throw new UnauthenticatedError('This credential is not accepted on this API.');
        req.principal = principal;
      } catch (error) {
        if (error instanceof UnauthenticatedError)
          res.setHeader('WWW-Authenticate', challenge('invalid_token'));
        throw error;
      }
      addLogContext({ teamId: req.principal.teamId });
      next();
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

  return {
    authenticate,
    forget,
    /** Drops the negative cache (a reactivated user's tokens are no longer unknown; which ones is not known). */
    forgetUnknown: () => unknown.clear(),
    clear: () => {
      cache.clear();
      unknown.clear();
      blocked.clear();
    },
  };
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
