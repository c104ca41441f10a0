import { UnauthenticatedError } from '@costgov/errors';
import type { ApiKeys } from '../keys/keys';
import type { ScimTokens } from '../keys/scim-tokens';
import { apiKeyPrefix, scimTokenPrefix } from '../keys/secrets';
import { looksLikeJwt, type OAuthVerifier } from './oauth';
import type { Principal } from './principal';

/** Tells the kind of a bearer credential by its shape and resolves it with the matching store. */
export function authenticator(deps: { apiKeys: ApiKeys; scimTokens: ScimTokens; oauth?: OAuthVerifier }) {
  return async function authenticate(credential: string): Promise<Principal> {
    if (credential.startsWith(apiKeyPrefix)) return deps.apiKeys.authenticateApiKey(credential);
    if (credential.startsWith(scimTokenPrefix)) return deps.scimTokens.authenticateScimToken(credential);
    if (deps.oauth && looksLikeJwt(credential)) return deps.oauth.authenticateOAuthToken(credential);
    throw new UnauthenticatedError();
  };
}
