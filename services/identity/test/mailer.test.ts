import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '@costgov/log';
import { createMailer, createMemoryMailer, isMailAddress } from '../src/mail/mailer';
import { welcomeEmail } from '../src/mail/welcome';

const from = 'Cost Governance <no-reply@costgov.test>';

function silentLogger() {
  const logger = createLogger('test', 'silent');
  return { logger, info: vi.spyOn(logger, 'info') };
}

/** A received or written message, read back as text: unfolded headers, and the body with quoted-printable undone. */
function parseMessage(raw: string): { headers: Map<string, string>; body: string } {
  const split = /\r?\n\r?\n/.exec(raw);
  if (!split)
    throw new Error(`not an RFC 822 message (no blank line after the headers): ${raw.slice(0, 200)}`);
  const headers = new Map<string, string>();
  for (const line of raw
    .slice(0, split.index)
    .replace(/\r?\n[ \t]+/g, ' ')
    .split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`not a header line: ${line}`);
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  const body = raw
    .slice(split.index + split[0].length)
    .replace(/=\r?\n/g, '')
    .replace(/(?:=[0-9A-F]{2})+/g, (encoded) =>
      Buffer.from(encoded.replace(/=/g, ''), 'hex').toString('utf8'),
    );
  return { headers, body };
}

interface Received {
  from: string | undefined;
  to: string[];
  user: string | undefined;
  raw: string;
}

describe('delivery through SMTP (SMTP_URL)', () => {
  const received: Received[] = [];
  let server: SMTPServer;
  let port: number;

  beforeAll(async () => {
    server = new SMTPServer({
      authOptional: true,
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username === 'mailer' && auth.password === 's3cret') callback(null, { user: auth.username });
        else callback(new Error('invalid credentials'));
      },
      onRcptTo(address, _session, callback) {
        if (address.address.endsWith('@refused.test')) callback(new Error('mailbox unavailable'));
        else callback();
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            user: typeof session.user === 'string' ? session.user : undefined,
            raw: Buffer.concat(chunks).toString('utf8'),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    port = (server.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  afterEach(() => {
    received.length = 0;
  });

  it('a welcome mail reaches the server with its sender, recipient, subject and the name in the body', async () => {
    const { logger, info } = silentLogger();
    const mailer = createMailer({
      smtpUrl: `smtp://mailer:s3cret@127.0.0.1:${port}`,
      dataDir: 'memory',
      from,
      logger,
    });
    const mail = welcomeEmail({
      userName: 'ada@example.com',
      givenName: 'Ada',
      teamName: 'Analytical Engines',
    });
    try {
      await mailer.send({ to: 'ada@example.com', ...mail });
    } finally {
      mailer.close();
    }

    expect(received).toHaveLength(1);
    const [message] = received;
    expect(message?.from).toBe('no-reply@costgov.test');
    expect(message?.to).toEqual(['ada@example.com']);
    expect(message?.user).toBe('mailer'); // the credentials of the URL were used
    const { headers, body } = parseMessage(message?.raw ?? '');
    expect(headers.get('from')).toBe(from);
    expect(headers.get('to')).toBe('ada@example.com');
    expect(headers.get('subject')).toBe('Welcome to Analytical Engines on Cost Governance');
    expect(body).toContain('Hello Ada,');
    expect(body).toContain('You now have access to Analytical Engines on Cost Governance');

    // One log line: who, what and how; never the body, never the SMTP password.
    expect(info).toHaveBeenCalledTimes(1);
    expect(info.mock.calls[0]?.[0]).toMatchObject({
      to: 'ada@example.com',
      subject: 'Welcome to Analytical Engines on Cost Governance',
      transport: `smtp://127.0.0.1:${port}`,
    });
    const logged = JSON.stringify(info.mock.calls);
    expect(logged).not.toContain('You now have access');
    expect(logged).not.toContain('s3cret');
  });

  it('fails the send when the server refuses the recipient', async () => {
    const { logger, info } = silentLogger();
    const mailer = createMailer({ smtpUrl: `smtp://127.0.0.1:${port}`, dataDir: 'memory', from, logger });
    try {
      await expect(
        mailer.send({ to: 'nobody@refused.test', subject: 'Hello', text: 'Hello' }),
      ).rejects.toThrow(/mailbox unavailable/);
    } finally {
      mailer.close();
    }
    expect(received).toHaveLength(0);
    expect(info).not.toHaveBeenCalled();
  });
});

describe('.eml files on the embedded default (no SMTP_URL)', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'costgov-mail-'));
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('writes each message as an RFC 822 file under <dataDir>/mail, named by time', async () => {
    const { logger, info } = silentLogger();
    const mailer = createMailer({
      dataDir,
      from,
      logger,
      now: () => new Date('2026-03-04T05:06:07.089Z'),
    });
    await mailer.send({ to: 'grace@example.com', ...welcomeEmail({ userName: 'grace', teamName: 'Navy' }) });
    mailer.close();

    const files = await readdir(path.join(dataDir, 'mail'));
    expect(files).toHaveLength(1);
    const [file] = files;
    expect(file).toMatch(/^2026-03-04T05-06-07\.089Z-[A-Za-z0-9._-]+\.eml$/);
    const { headers, body } = parseMessage(await readFile(path.join(dataDir, 'mail', file ?? ''), 'utf8'));
    expect(headers.get('subject')).toBe('Welcome to Navy on Cost Governance');
    expect(headers.get('to')).toBe('grace@example.com');
    expect(headers.get('from')).toBe(from);
    expect(headers.get('mime-version')).toBe('1.0');
    expect(headers.get('content-type')).toMatch(/^multipart\/alternative;/);
    expect(headers.get('message-id')).toMatch(/^<.+@.+>$/);
    expect(body).toContain('Hello grace,');
    expect(info.mock.calls[0]?.[0]).toMatchObject({ to: 'grace@example.com', transport: 'eml' });
  });

  it('keeps the messages in memory when the data folder is memory', async () => {
    const { logger } = silentLogger();
    const mailer = createMemoryMailer({ from, logger });
    await mailer.send({ to: 'ada@example.com', subject: 'First', text: 'one' });
    await mailer.send({ to: 'ada@example.com', subject: 'Second', text: 'two' });
    mailer.close();
    expect(mailer.sent().map((raw) => parseMessage(raw).headers.get('subject'))).toEqual(['First', 'Second']);
  });
});

describe('recipients and configuration', () => {
  it.each([
    ['ada@example.com', true],
    ['ada+scim@mail.example.co.uk', true],
    ['ada@example.com, eve@evil.test', false],
    ['Ada <ada@example.com>', false],
    ['ada@example.com\r\nBcc: eve@evil.test', false],
    ['ada', false],
    ['ada@localhost', false],
    ['', false],
  ])('isMailAddress(%j) is %s', (value, expected) => {
    expect(isMailAddress(value)).toBe(expected);
  });

  it('refuses to send to anything but one address, and sends nothing', async () => {
    const { logger } = silentLogger();
    const mailer = createMemoryMailer({ from, logger });
    await expect(
      mailer.send({ to: 'a@example.com, b@example.com', subject: 'x', text: 'x' }),
    ).rejects.toThrow(/not a single e-mail address/);
    expect(mailer.sent()).toEqual([]);
  });

  it.each([
    ['http://mailer:s3cret@mail.example.com', /must start with smtp:\/\/ or smtps:\/\/, not http:/],
    ['mail.example.com:25', /must start with smtp:\/\/ or smtps:\/\//],
    ['not a url s3cret', /not a valid URL/],
  ])('rejects SMTP_URL %j without repeating it', (smtpUrl, message) => {
    const { logger } = silentLogger();
    const create = () => createMailer({ smtpUrl, dataDir: 'memory', from, logger });
    expect(create).toThrow(message);
    expect(create).not.toThrow(/s3cret/);
  });
});
