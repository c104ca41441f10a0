import path from 'node:path';
import { identity, scim } from '@costgov/contracts';
import { newUuid } from '@costgov/ids';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { bootstrap, type BootstrapResult } from './bootstrap';
import { identityConfig, type IdentityConfig } from './config';
import { authenticator } from './auth/authenticate';
import { oauthConfigFrom, oauthVerifier } from './auth/oauth';
import { apiKeysFactory } from './keys/keys';
import { scimTokensFactory } from './keys/scim-tokens';
import { createMailer, type Mailer } from './mail/mailer';
import { welcomeMailHandler } from './mail/welcome-consumer';
import { identityRpc } from './rpc';
import { discover } from './scim/discovery';
import { scimGroupsFactory } from './scim/groups';
import { scimRpc } from './scim/rpc';
import { scimUsersFactory } from './scim/users';
import { scanCreditsFactory } from './teams/scan-credits';
import { teamSettingsFactory } from './teams/settings';
import { teamsFactory } from './teams/teams';
import { activeUsersFactory } from './users/active-users';

export interface IdentityOptions {
  /** Told once, on the first start of an empty database, what was bootstrapped. */
  onBootstrap?: (result: BootstrapResult) => void;
  /** Where welcome e-mails go; by default SMTP_URL, else .eml files under DATA_DIR/mail. */
  mailer?: Mailer;
}

export function identityModule(options: IdentityOptions = {}): ServiceModule<IdentityConfig> {
  return {
    name: 'identity',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: identityConfig,
    async start({ db, rpc, newId, now, config, logger, outbox, consume, dataDir }) {
      const teams = teamsFactory({ db, newId });
      const apiKeys = apiKeysFactory({ db, newId, now, outbox });
      const scimTokens = scimTokensFactory({ db, newId, now, outbox });
      const oauthConfig = oauthConfigFrom(config);
      const oauth = oauthConfig && oauthVerifier({ config: oauthConfig, db, logger, now });
      if (!oauth) logger.info('OAUTH_ISSUER / OAUTH_AUDIENCE not set: OAuth bearer tokens are not accepted');
      const authenticate = authenticator({ apiKeys, scimTokens, oauth });
      const activeUsers = activeUsersFactory({ db });
      const scanCredits = scanCreditsFactory({ db });
      const settings = teamSettingsFactory({ db });
      rpc.add(
        identity.IdentityService,
        identityRpc({ teams, apiKeys, scimTokens, activeUsers, scanCredits, settings, authenticate }),
      );

      const users = scimUsersFactory({ db, outbox, newUuid, now });
      const groups = scimGroupsFactory({ db, outbox, newUuid, now });
      rpc.add(scim.ScimService, scimRpc({ db, users, groups, discover }));

      const mailer =
        options.mailer ??
        createMailer({
          smtpUrl: config.SMTP_URL,
          dataDir,
          from: config.MAIL_FROM,
          logger,
        });
      await consume({
        durable: 'identity_welcome_email',
        types: ['identity.user.created'],
        handler: welcomeMailHandler(mailer, logger),
      });
      const result = await bootstrap({ db, teams, apiKeys }, config.GUARD_BOOTSTRAP_API_KEY);
      if (result) {
        logger.info(
          { team_id: result.teamId, api_key_source: result.apiKeySource },
          'bootstrapped team default',
        );
        (options.onBootstrap ?? printBootstrap)(result);
      }
      return async () => mailer.close();
    },
  };
}

/**
 * The generated key is printed once, not logged: log lines are shipped and kept. It goes to stderr, so
 * that stdout carries only JSON log lines.
 */
export function printBootstrap(result: BootstrapResult): void {
  if (result.generatedApiKey) {
    process.stderr.write(
      `\nCreated team 'default' (${result.teamId}) with a new API key. It is shown only this once:\n\n  ${result.generatedApiKey}\n\n`,
    );
  } else {
    process.stderr.write(
      `\nCreated team 'default' (${result.teamId}); its API key is GUARD_BOOTSTRAP_API_KEY.\n\n`,
    );
  }
}
