import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from '@costgov/log';

/**
 * Outgoing e-mail. With an SMTP URL, mail goes to that server; on the embedded default it is written as
 * `.eml` files under the data folder (or kept in memory for `DATA_DIR=memory`), so a developer can open
 * what would have been sent. nodemailer builds the MIME message in every case.
 */

export interface MailMessage {
  /** One address, without a display name: `ada@example.com`. */
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export interface MailerOptions {
  /** `smtp://user:pass@host:587` or `smtps://user:pass@host:465`; absent on the embedded default. */
  smtpUrl?: string;
  /** The data folder; `memory` keeps the messages in memory. */
  dataDir: string;
  /** The From header: `Cost Governance <no-reply@example.com>`. */
  from: string;
  logger: Logger;
  now?: () => Date;
}

export type MemoryMailer = Mailer & {
  /** The raw RFC 822 messages sent so far, oldest first. */
  sent(): string[];
};

// One address and nothing else: no display name, no list, no whitespace. A recipient taken from an
// identity provider's data must not be able to add recipients (`a@x.com, b@y.com`) or headers.
const addressPattern = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

/** Whether `value` is a single plain e-mail address. */
export function isMailAddress(value: string): boolean {
  return value.length <= 254 && addressPattern.test(value);
}

export function createMailer(options: MailerOptions): Mailer {
  if (options.smtpUrl) return smtpMailer({ ...options, smtpUrl: options.smtpUrl });
  if (options.dataDir === 'memory') return createMemoryMailer(options);
  return emlMailer(options);
}

/** A mailer that keeps every message in memory (`DATA_DIR=memory`, and tests). */
export function createMemoryMailer(options: Pick<MailerOptions, 'from' | 'logger'>): MemoryMailer {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const messages: string[] = [];
  return {
    async send(message) {
      const info = await transport.sendMail(mailOptions(options.from, message));
      messages.push(rawMessage(info.message));
      logSent(options.logger, message, 'memory', info.messageId);
    },
    close() {
      transport.close();
    },
    sent: () => [...messages],
  };
}

function smtpMailer(options: MailerOptions & { smtpUrl: string }): Mailer {
  let url: URL;
  try {
    url = new URL(options.smtpUrl);
  } catch {
    // The URL carries credentials: it is not repeated in the message.
    throw new Error('SMTP_URL is not a valid URL; expected smtp://user:password@host:port');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new Error(`SMTP_URL must start with smtp:// or smtps://, not ${url.protocol}//`);
  }
  // The welcome mail is sent inside a consumer's transaction: a hung server must not hold it for
  // nodemailer's default minutes. The URL can still set its own values.
  for (const [name, ms] of [
    ['connectionTimeout', 10_000],
    ['greetingTimeout', 10_000],
    ['socketTimeout', 30_000],
  ] as const) {
    if (!url.searchParams.has(name)) url.searchParams.set(name, String(ms));
  }
  const transport = nodemailer.createTransport(url.toString());
  // Logged without the credentials.
  const where = `${url.protocol}//${url.host}`;
  return {
    async send(message) {
      const info = await transport.sendMail(mailOptions(options.from, message));
      logSent(options.logger, message, where, info.messageId);
    },
    close() {
      transport.close();
    },
  };
}

function emlMailer(options: MailerOptions): Mailer {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const folder = path.resolve(options.dataDir, 'mail');
  const now = options.now ?? (() => new Date());
  return {
    async send(message) {
      const info = await transport.sendMail(mailOptions(options.from, message));
      await mkdir(folder, { recursive: true });
      // Colons are not allowed in Windows file names; the time first keeps `ls` in sending order.
      const file = path.join(
        folder,
        `${now().toISOString().replace(/:/g, '-')}-${fileId(info.messageId)}.eml`,
      );
      await writeFile(file, rawMessage(info.message), { flag: 'wx' });
      logSent(options.logger, message, 'eml', info.messageId, file);
    },
    close() {
      transport.close();
    },
  };
}

function mailOptions(from: string, message: MailMessage) {
  if (!isMailAddress(message.to)) {
    throw new Error(`cannot send mail to ${JSON.stringify(message.to)}: not a single e-mail address`);
  }
  return {
    from,
    to: message.to,
    subject: message.subject,
    text: message.text,
    ...(message.html !== undefined ? { html: message.html } : {}),
  };
}

/** The Message-ID without its brackets and anything a file name should not hold; random if absent. */
function fileId(messageId: string | undefined): string {
  const id = (messageId ?? '').replace(/[<>]/g, '').replace(/[^A-Za-z0-9._-]/g, '_');
  return id === '' ? randomUUID() : id;
}

function rawMessage(message: unknown): string {
  if (!Buffer.isBuffer(message)) throw new Error('the stream transport did not return a buffer');
  return message.toString('utf8');
}

/** One line per mail: who, what and how. Never the body, which may hold personal data. */
function logSent(
  logger: Logger,
  message: MailMessage,
  transport: string,
  messageId: string | undefined,
  file?: string,
): void {
  logger.info(
    {
      to: message.to,
      subject: message.subject,
      transport,
      message_id: messageId,
      ...(file !== undefined ? { file } : {}),
    },
    'sent mail',
  );
}
