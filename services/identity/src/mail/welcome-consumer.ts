import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import type { Mailer } from './mailer';
import { welcomeEmail, welcomeRecipient } from './welcome';

/**
 * Sends the welcome e-mail of a user created over SCIM. It runs as an idempotent consumer of
 * identity.user.created, so a failed send is retried with backoff and a redelivery sends nothing twice
 * (short of a crash between the send and the commit).
 */
export function welcomeMailHandler(mailer: Mailer, logger: Logger) {
  return async (tx: Queryable, event: CloudEvent): Promise<void> => {
    const { userId, teamId } = decodeEvent(events.UserChangedSchema, event);
    const { rows } = await tx.query<{
      user_name: string;
      given_name: string | null;
      display_name: string | null;
      emails: Array<{ value: string; primary?: boolean; type?: string }>;
      team_name: string;
    }>(
      `SELECT u.user_name, u.given_name, u.display_name, u.emails, t.name AS team_name
       FROM scim_users u JOIN teams t ON t.id = u.team_id WHERE u.id = $1 AND u.team_id = $2`,
      [userId, teamId],
    );
    const user = rows[0];
    if (!user) return; // gone since: nothing to welcome
    const to = welcomeRecipient({ userName: user.user_name, emails: user.emails });
    if (!to) {
      logger.info({ user_id: userId }, 'no e-mail address for the welcome e-mail');
      return;
    }
    const mail = welcomeEmail({
      userName: user.user_name,
      givenName: user.given_name ?? undefined,
      displayName: user.display_name ?? undefined,
      teamName: user.team_name,
    });
    await mailer.send({ to, ...mail });
  };
}
