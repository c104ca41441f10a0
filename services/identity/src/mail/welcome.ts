import { isMailAddress } from './mailer';

/** The welcome e-mail a user created over SCIM receives (spec: "creating a user via SCIM sends ... a welcome e-mail"). */

export interface WelcomeInput {
  userName: string;
  givenName?: string;
  displayName?: string;
  teamName: string;
}

export interface WelcomeEmail {
  subject: string;
  text: string;
  html: string;
}

export interface WelcomeUser {
  userName: string;
  emails: Array<{ value: string; primary?: boolean; type?: string }>;
}

const productName = 'Cost Governance';

/** Values from an identity provider on one line: a line break in a header or a greeting is never wanted. */
const oneLine = (value: string): string => value.replace(/\s+/g, ' ').trim();

const htmlEntities: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => htmlEntities[c] ?? c);

export function welcomeEmail(input: WelcomeInput): WelcomeEmail {
  const team = oneLine(input.teamName);
  const userName = oneLine(input.userName);
  const greeting = oneLine(input.givenName || input.displayName || '') || userName;
  const subject = `Welcome to ${team} on ${productName}`;
  const text = [
    `Hello ${greeting},`,
    '',
    `You now have access to ${team} on ${productName}. Sign in through your organisation's single sign-on as ${userName}.`,
    '',
    `You received this e-mail because your identity provider added you to ${team}.`,
    '',
  ].join('\n');
  const html = [
    '<!doctype html>',
    '<html><body>',
    `<p>Hello ${escapeHtml(greeting)},</p>`,
    `<p>You now have access to <strong>${escapeHtml(team)}</strong> on ${productName}. ` +
      `Sign in through your organisation's single sign-on as ${escapeHtml(userName)}.</p>`,
    `<p>You received this e-mail because your identity provider added you to ${escapeHtml(team)}.</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject, text, html };
}

/**
 * Where the welcome e-mail goes: the primary e-mail, else a work e-mail, else the first e-mail, else the
 * userName when it is an e-mail address; undefined when there is none (no mail is sent then). Values that
 * are not a single e-mail address are passed over.
 */
export function welcomeRecipient(user: WelcomeUser): string | undefined {
  const emails = user.emails.filter((email) => isMailAddress(email.value));
  const chosen =
    emails.find((email) => email.primary === true) ??
    emails.find((email) => email.type?.toLowerCase() === 'work') ??
    emails[0];
  if (chosen) return chosen.value;
  return isMailAddress(user.userName) ? user.userName : undefined;
}
