import { randomBytes } from 'node:crypto';
import { decodeEvent, type Bus, type Consumer } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import type { Authenticator } from './http/auth';

/**
 * Every gateway replica listens (on a durable of its own that starts at new events and expires when the
 * replica is gone) for revoked credentials and deactivated users, and drops what it cached for them; a
 * reactivated user's tokens, remembered as unknown while refused, are forgotten too.
 */
export function listenForRevocations(bus: Bus, auth: Authenticator, logger: Logger): Promise<Consumer> {
  return bus.consume({
    durable: `gateway_${randomBytes(6).toString('hex')}`,
    types: ['identity.key.revoked', 'identity.user.deactivated', 'identity.user.reactivated'],
    startFrom: 'new',
    expireWhenIdleMs: 5 * 60_000,
    handler: async (event) => {
      if (event.type === 'identity.key.revoked') {
        const { credentialId } = decodeEvent(events.CredentialRevokedSchema, event);
        const dropped = auth.forget({ credentialId });
        logger.info({ credential_id: credentialId, dropped }, 'credential revoked');
      } else if (event.type === 'identity.user.reactivated') {
        // The user's tokens were refused while inactive and are remembered as unknown: forget that.
        const { userId } = decodeEvent(events.UserChangedSchema, event);
        auth.forgetUnknown();
        logger.info({ user_id: userId }, 'user reactivated');
      } else {
        const { userId } = decodeEvent(events.UserChangedSchema, event);
        const dropped = auth.forget({ userId });
        logger.info({ user_id: userId, dropped }, 'user deactivated');
      }
    },
  });
}
