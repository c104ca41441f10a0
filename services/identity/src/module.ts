import path from 'node:path';
import { identity } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { bootstrap, type BootstrapResult } from './bootstrap';
import { authenticator } from './auth/authenticate';
import { oauthConfigFrom, oauthVerifier } from './auth/oauth';
import { apiKeysFactory } from './keys/keys';
import { scimTokensFactory } from './keys/scim-tokens';
import { identityRpc } from './rpc';
import { teamsFactory } from './teams/teams';

export interface IdentityOptions {
  /** Told once, on the first start of an empty database, what was bootstrapped. */
  onBootstrap?: (result: BootstrapResult) => void;
}

export function identityModule(options: IdentityOptions = {}): ServiceModule {
  return {
    name: 'identity',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start({ db, rpc, newId, now, env, logger, outbox }) {
      const teams = teamsFactory({ db, newId });
      const apiKeys = apiKeysFactory({ db, newId, now, outbox });
      const scimTokens = scimTokensFactory({ db, newId, now, outbox });
      const oauthConfig = oauthConfigFrom(env);
      const oauth = oauthConfig && oauthVerifier({ config: oauthConfig, db, logger, now });
      if (!oauth) logger.info('OAUTH_ISSUER / OAUTH_AUDIENCE not set: OAuth bearer tokens are not accepted');
      const authenticate = authenticator({ apiKeys, scimTokens, oauth });
      rpc.add(identity.IdentityService, identityRpc({ teams, apiKeys, scimTokens, authenticate }));
      const result = await bootstrap({ db, teams, apiKeys }, env.GUARD_BOOTSTRAP_API_KEY || undefined);
      if (result) {
        logger.info(
          { team_id: result.teamId, api_key_source: result.apiKeySource },
          'bootstrapped team default',
        );
        (options.onBootstrap ?? printBootstrap)(result);
      }
    },
  };
}

/** The generated key is printed to stdout once, not logged: logs are shipped and kept, stdout of a first start is not. */
export function printBootstrap(result: BootstrapResult): void {
  if (result.generatedApiKey) {
    process.stdout.write(
      `\nCreated team 'default' (${result.teamId}) with a new API key. It is shown only this once:\n\n  ${result.generatedApiKey}\n\n`,
    );
  } else {
    process.stdout.write(
      `\nCreated team 'default' (${result.teamId}); its API key is GUARD_BOOTSTRAP_API_KEY.\n\n`,
    );
  }
}
