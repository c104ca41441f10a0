import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import { addressProblem } from '../src/deliveries/address-policy';
import { createSender, refusedExcerpts, type Resolve } from '../src/deliveries/send';
import { publish, startNotifier, teamCtx, violationCreated, type Fixture } from './fixture';
import { startReceiver, type Receiver } from './receiver';

let receiver: Receiver;
const strict = { allowPrivateNetworks: false, allowedHosts: [] };
const request = (url: string) => ({ url, headers: { 'content-type': 'application/json' }, body: '{}' });

/** A resolver that answers each name with the addresses the test gives (a rebinding DNS server, say). */
const resolverOf =
  (answers: Record<string, string[]>): Resolve =>
  (hostname, _options, callback) => {
    const addresses = answers[hostname];
    if (!addresses) {
      const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      error.code = 'ENOTFOUND';
      return callback(error, []);
    }
    callback(
      null,
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };

beforeAll(async () => {
  receiver = await startReceiver();
});

afterAll(() => receiver?.close());

describe('outbound requests (SSRF guard)', () => {
  /** A logger that keeps what was logged at warn. */
  const warnings = () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = { warn: (fields: Record<string, unknown>) => lines.push(fields) } as unknown as Logger;
    return { logger, lines };
  };

  it.each([
    ['a private IPv4 literal', 'http://10.0.0.1/hook', 'address 10.0.0.1 is private; refused'],
    ['loopback', 'http://127.0.0.1:1/hook', 'address 127.0.0.1 is loopback; refused'],
    ['IPv6 loopback', 'http://[::1]:1/hook', 'address ::1 is loopback; refused'],
    [
      'IPv4-mapped IPv6',
      'http://[::ffff:169.254.169.254]/',
      'address 169.254.169.254 is link-local, where cloud metadata services live; refused',
    ],
    [
      'IPv4-compatible IPv6 of loopback',
      'http://[::127.0.0.1]:1/',
      'address ::7f00:1 is IPv4-compatible IPv6 (::/96); refused',
    ],
    [
      'IPv4-compatible IPv6 of a private address',
      'http://[::a00:1]/',
      'address ::a00:1 is IPv4-compatible IPv6 (::/96); refused',
    ],
    ['the unspecified address', 'http://0.0.0.0:1/', 'address 0.0.0.0 is unspecified; refused'],
    ['localhost', 'http://localhost:1/', 'host localhost is loopback; refused'],
  ])('refuses %s before connecting; the address is logged, not shown', async (_, url, logged) => {
    const { logger, lines } = warnings();
    const send = createSender({ policy: strict, timeoutMs: 2_000, logger });
    expect(await send(request(url))).toEqual({ status: 0, excerpt: refusedExcerpts.address });
    expect(lines).toMatchObject([{ reason: logged }]);
  });

  it('refuses IPv4-compatible IPv6 (::/96), which ipaddr.js calls unicast', () => {
    expect(addressProblem('::7f00:1')).toMatch(/refused/);
    expect(addressProblem('::a00:1')).toMatch(/refused/);
    expect(addressProblem('::808:808')).toMatch(/refused/);
    expect(addressProblem('2606:4700::1111')).toBeUndefined();
  });

  it.each([
    ['loopback', ['127.0.0.1'], 'address 127.0.0.1 is loopback; refused'],
    ['private', ['192.168.10.7'], 'address 192.168.10.7 is private; refused'],
    ['IPv4-mapped private', ['::ffff:10.1.2.3'], 'address 10.1.2.3 is private; refused'],
    ['IPv4-compatible private', ['::a00:1'], 'address ::a00:1 is IPv4-compatible IPv6 (::/96); refused'],
    ['unique-local', ['fc00::5'], 'address fc00::5 is unique-local; refused'],
    ['one public, one loopback', ['93.184.216.34', '127.0.0.1'], 'address 127.0.0.1 is loopback; refused'],
  ])('refuses a host name resolving to %s at connect time', async (_, addresses, logged) => {
    const { logger, lines } = warnings();
    const send = createSender({
      policy: strict,
      timeoutMs: 2_000,
      resolveHost: resolverOf({ 'hooks.example.test': addresses }),
      logger,
    });
    // The team reads the excerpt: it tells neither the address nor whether the name resolved at all.
    expect(await send(request(`http://hooks.example.test:${receiver.port}/hook`))).toEqual({
      status: 0,
      excerpt: refusedExcerpts.host,
    });
    expect(lines).toMatchObject([{ host: 'hooks.example.test', reason: logged }]);
    expect(receiver.received).toHaveLength(0);
  });

  it.each([
    ['does not resolve', resolverOf({})],
    ['resolves to nothing', resolverOf({ 'hooks.example.test': [] })],
  ])('answers a host name that %s like a refused one', async (_, resolveHost) => {
    const send = createSender({ policy: strict, timeoutMs: 2_000, resolveHost });
    expect(await send(request(`http://hooks.example.test:${receiver.port}/hook`))).toEqual({
      status: 0,
      excerpt: refusedExcerpts.host,
    });
  });

  it.each([
    ['an invalid URL', request('http://exa mple.test/hook?token=s3cret')],
    ['a protocol node:http does not speak', request('ftp://example.test/hook?token=s3cret')],
    [
      'a header node:http refuses',
      { ...request('http://example.test/hook?token=s3cret'), headers: { 'x-bad': 'a\nb' } },
    ],
  ])('makes %s a failed attempt without the URL, and never throws', async (_, outbound) => {
    const send = createSender({ policy: { allowPrivateNetworks: true, allowedHosts: [] }, timeoutMs: 2_000 });
    const result = await send(outbound);
    expect(result).toEqual({ status: 0, excerpt: refusedExcerpts.invalid });
    expect(result.excerpt).not.toContain('s3cret');
  });

  it('lets through a host on the allow-list, and everything when private networks are allowed', async () => {
    const resolveHost = resolverOf({ 'relay.internal': ['127.0.0.1'] });
    const listed = createSender({
      policy: { allowPrivateNetworks: false, allowedHosts: ['relay.internal'] },
      timeoutMs: 2_000,
      resolveHost,
    });
    expect(await listed(request(`http://relay.internal:${receiver.port}/hook`))).toEqual({
      status: 204,
      excerpt: '',
    });
    expect(receiver.received.map((r) => r.headers.host)).toEqual([`relay.internal:${receiver.port}`]);
    receiver.received.length = 0;
    const open = createSender({ policy: { allowPrivateNetworks: true, allowedHosts: [] }, timeoutMs: 2_000 });
    expect(await open(request(receiver.url()))).toEqual({ status: 204, excerpt: '' });
  });

  describe('cloud metadata, when private networks are allowed', () => {
    const open = { allowPrivateNetworks: true, allowedHosts: ['relay.internal'] };

    it.each([
      ['IMDS', 'http://169.254.169.254/latest/meta-data', 'address 169.254.169.254 is link-local'],
      ['IMDS over IPv6', 'http://[fd00:ec2::254]/', 'address fd00:ec2::254 is a cloud metadata service'],
      ['IPv4-mapped IMDS', 'http://[::ffff:169.254.169.254]/', 'address 169.254.169.254 is link-local'],
      ['Alibaba metadata', 'http://100.100.100.200/latest/meta-data', 'address 100.100.100.200 is a cloud'],
      ['IPv6 link-local', 'http://[fe80::1]/', 'address fe80::1 is link-local'],
      [
        'GCP metadata',
        'http://metadata.google.internal/computeMetadata/v1/',
        'host metadata.google.internal',
      ],
    ])('refuses %s before connecting', async (_, url, logged) => {
      const { logger, lines } = warnings();
      const send = createSender({ policy: open, timeoutMs: 2_000, resolveHost: resolverOf({}), logger });
      expect(await send(request(url))).toEqual({ status: 0, excerpt: refusedExcerpts.address });
      expect(lines).toHaveLength(1);
      expect(lines[0]!.reason).toContain(logged);
    });

    it.each([
      ['a name resolving to IMDS', 'hooks.example.test', ['169.254.169.254']],
      ['a name resolving to IMDS over IPv6', 'hooks.example.test', ['fd00:ec2::254']],
      ['a name resolving to mapped IMDS', 'hooks.example.test', ['::ffff:169.254.169.254']],
      ['a name resolving to Alibaba metadata', 'hooks.example.test', ['100.100.100.200']],
      ['a name resolving to loopback and IMDS', 'hooks.example.test', ['127.0.0.1', '169.254.169.254']],
      ['an allowed name resolving to IMDS', 'relay.internal', ['169.254.169.254']],
    ])('refuses %s at connect time', async (_, host, addresses) => {
      receiver.received.length = 0;
      const { logger, lines } = warnings();
      const send = createSender({
        policy: open,
        timeoutMs: 2_000,
        resolveHost: resolverOf({ [host]: addresses }),
        logger,
      });
      expect(await send(request(`http://${host}:${receiver.port}/hook`))).toEqual({
        status: 0,
        excerpt: refusedExcerpts.host,
      });
      expect(lines).toMatchObject([{ host, reason: expect.stringContaining('metadata') }]);
      expect(receiver.received).toHaveLength(0);
    });
  });

  it('does not follow redirects: a 3xx is the answer', async () => {
    receiver.answer((r) =>
      r.path === '/moved'
        ? { status: 302, headers: { location: '/target' }, body: 'moved' }
        : { status: 200 },
    );
    const send = createSender({ policy: { allowPrivateNetworks: true, allowedHosts: [] }, timeoutMs: 2_000 });
    receiver.received.length = 0;
    expect(await send(request(receiver.url('/moved')))).toEqual({ status: 302, excerpt: 'moved' });
    expect(receiver.received.map((r) => r.path)).toEqual(['/moved']);
    receiver.answer(() => ({ status: 204 }));
  });
});

describe('a refused address in the delivery log', () => {
  let fixture: Fixture;

  beforeAll(async () => {
    fixture = await startNotifier({
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' },
      send: createSender({
        policy: strict,
        timeoutMs: 2_000,
        resolveHost: resolverOf({ 'rebind.example.test': ['127.0.0.1'] }),
      }),
    });
  });

  afterAll(() => fixture?.stop());

  it('is a failed attempt with the reason, and the endpoint is never reached', async () => {
    const ctx = teamCtx(newId('team'));
    const { webhook } = await fixture.client.createWebhook(
      { url: `http://rebind.example.test:${receiver.port}/hook`, events: ['*'], description: '' },
      ctx,
    );
    receiver.received.length = 0;
    await publish(fixture, violationCreated(ctx.teamId));
    expect(await fixture.notifiers[0]!.module.dispatcher().runOnce()).toBe(1);
    const [delivery] = (await fixture.client.listDeliveries({ webhookId: webhook!.id }, ctx)).deliveries;
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1 });
    expect(delivery!.attemptLog).toMatchObject([
      { responseStatus: 0, outcome: 'failure', responseExcerpt: refusedExcerpts.host },
    ]);
    expect(delivery!.attemptLog[0]!.responseExcerpt).not.toContain('127.0.0.1');
    expect(receiver.received).toHaveLength(0);
  });
});
