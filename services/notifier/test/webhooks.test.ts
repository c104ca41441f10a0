import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { BadRequestError, NotFoundError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { deliverableEventTypes } from '../src/events/catalogue';
import { startNotifier, teamCtx, type Fixture } from './fixture';

let fixture: Fixture;
let strict: Fixture;
const team = teamCtx(newId('team'));
const otherTeam = teamCtx(newId('team'));

beforeAll(async () => {
  fixture = await startNotifier();
  // The SSRF guard as production has it.
  strict = await startNotifier({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
});

afterAll(async () => {
  await fixture?.stop();
  await strict?.stop();
});

const create = async (body: { url?: string; events?: string[]; description?: string } = {}, ctx = team) => {
  const { webhook, secret } = await fixture.client.createWebhook(
    { url: 'https://hooks.example.com/costgov', events: ['violations.*'], description: '', ...body },
    ctx,
  );
  return { webhook: webhook!, secret };
};

type UpdateRequest = Parameters<Fixture['client']['updateWebhook']>[0];

const update = async (request: UpdateRequest, ctx = team) => {
  const { webhook, secret } = await fixture.client.updateWebhook(request, ctx);
  return { webhook: webhook!, secret };
};

const fieldsOf = async (call: Promise<unknown>) => {
  const error = await call.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ValidationError);
  return (error as ValidationError).details.map((d) => d.field);
};

describe('create', () => {
  it('returns the endpoint and its secret once; reads never show it', async () => {
    const created = await create({ description: 'Slack relay', events: ['violations.*', '*'] });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret!.slice(6), 'base64')).toHaveLength(32);
    expect(created.webhook).toMatchObject({
      url: 'https://hooks.example.com/costgov',
      events: ['violations.*', '*'],
      description: 'Slack relay',
      enabled: true,
      disabledReason: '',
    });
    expect(created.webhook.id).toMatch(/^whk_/);
    const read = await fixture.client.getWebhook({ id: created.webhook.id }, team);
    expect(read).toEqual(created.webhook);
    expect(JSON.stringify(read, (_, v: unknown) => (typeof v === 'bigint' ? `${v}` : v))).not.toContain(
      'whsec_',
    );
  });

  it('keeps each pattern once, in the order given', async () => {
    const { webhook } = await create({ events: ['budgets.budget.*', 'violations.*', 'budgets.budget.*'] });
    expect(webhook.events).toEqual(['budgets.budget.*', 'violations.*']);
  });

  it.each([
    ['a relative url', { url: '/hooks' }, ['url']],
    ['an ftp url', { url: 'ftp://example.com/x' }, ['url']],
    ['credentials in the url', { url: 'https://user:pw@example.com/x' }, ['url']],
    ['a url with spaces', { url: ' https://example.com/a b' }, ['url']],
    ['a url over 2048 characters', { url: `https://example.com/${'a'.repeat(2040)}` }, ['url']],
    ['no events', { events: [] }, ['events']],
    ['51 patterns', { events: Array.from({ length: 51 }, () => '*') }, ['events']],
    ['an unknown type', { events: ['violations.violation.exploded'] }, ['events[0]']],
    ['an internal type', { events: ['scanner.scan.requested'] }, ['events[0]']],
    ['a partial-token wildcard', { events: ['violations.viol*'] }, ['events[0]']],
    ['a NATS wildcard', { events: ['budgets.>'] }, ['events[0]']],
    ['a wildcard matching nothing', { events: ['billing.*'] }, ['events[0]']],
    ['a description over 500 characters', { description: 'x'.repeat(501) }, ['description']],
    [
      'everything wrong',
      { url: 'nope', events: ['x'], description: 'y'.repeat(501) },
      ['url', 'events[0]', 'description'],
    ],
  ])('refuses %s with the field named', async (_, body, fields) => {
    const before = await fixture.client.listWebhooks({}, team);
    expect(await fieldsOf(create(body))).toEqual(fields);
    expect((await fixture.client.listWebhooks({}, team)).meta?.totalCount).toBe(before.meta?.totalCount);
  });

  it('accepts every deliverable type, `*` and whole-token prefixes', async () => {
    const patterns = [
      '*',
      'violations.*',
      'budgets.budget.*',
      'scanner.*',
      ...deliverableEventTypes.slice(0, 40),
    ];
    const { webhook } = await create({ events: patterns });
    expect(webhook.events).toEqual(patterns);
  });

  it.each([
    ['a private IPv4 literal', 'http://10.0.0.1/hook', 'address 10.0.0.1 is private; refused'],
    ['loopback', 'http://127.0.0.1:8080/hook', 'address 127.0.0.1 is loopback; refused'],
    ['IPv6 loopback', 'http://[::1]/hook', 'address ::1 is loopback; refused'],
    ['IPv6 unique-local', 'http://[fd00::1]/hook', 'address fd00::1 is unique-local; refused'],
    ['IPv4-mapped IPv6', 'http://[::ffff:192.168.1.1]/hook', 'address 192.168.1.1 is private; refused'],
    [
      'IPv4-compatible IPv6',
      'http://[::127.0.0.1]/hook',
      'address ::7f00:1 is IPv4-compatible IPv6 (::/96); refused',
    ],
    [
      'carrier-grade NAT',
      'http://100.64.0.1/hook',
      'address 100.64.0.1 is carrier-grade NAT (shared); refused',
    ],
    ['localhost', 'http://localhost:3000/hook', 'host localhost is loopback; refused'],
  ])('refuses %s unless private networks are allowed', async (_, url, message) => {
    const error = await strict.client
      .createWebhook({ url, events: ['*'], description: '' }, team)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toEqual([{ field: 'url', message }]);
    await expect(create({ url })).resolves.toBeDefined(); // the fixture allows private networks
  });
});

describe('cloud metadata targets', () => {
  it.each([
    [
      'IMDS',
      'http://169.254.169.254/latest/meta-data',
      'address 169.254.169.254 is link-local, where cloud metadata services live; refused',
    ],
    [
      'IMDS over IPv6',
      'http://[fd00:ec2::254]/',
      'address fd00:ec2::254 is a cloud metadata service; refused',
    ],
    [
      'IPv4-mapped IMDS',
      'http://[::ffff:169.254.169.254]/',
      'address 169.254.169.254 is link-local, where cloud metadata services live; refused',
    ],
    [
      'GCP metadata',
      'http://metadata.google.internal/computeMetadata/v1/',
      'host metadata.google.internal is a cloud metadata service; refused',
    ],
    [
      'Alibaba metadata',
      'http://100.100.100.200/latest/meta-data',
      'address 100.100.100.200 is a cloud metadata service; refused',
    ],
  ])('refuses %s even when private networks are allowed', async (_, url, message) => {
    for (const notifier of [fixture, strict]) {
      const error = await notifier.client
        .createWebhook({ url, events: ['*'], description: '' }, team)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details).toEqual([{ field: 'url', message }]);
    }
    const { webhook } = await create();
    const error = await update({ id: webhook.id, url }).catch((e: unknown) => e);
    expect((error as ValidationError).details).toEqual([{ field: 'url', message }]);
  });
});

describe('list', () => {
  it('pages newest first and filters by enabled', async () => {
    const ctx = teamCtx(newId('team'));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create({ description: `n${i}` }, ctx)).webhook.id);
    await update({ id: ids[1]!, enabled: false }, ctx);
    const all = await fixture.client.listWebhooks({ page: { page: 1, perPage: 2 } }, ctx);
    expect(all.webhooks.map((w) => w.id)).toEqual([ids[2], ids[1]]);
    expect(all.meta).toMatchObject({ totalCount: 3, totalPages: 2, currentPage: 1, perPage: 2 });
    const second = await fixture.client.listWebhooks({ page: { page: 2, perPage: 2 } }, ctx);
    expect(second.webhooks.map((w) => w.id)).toEqual([ids[0]]);
    const disabled = await fixture.client.listWebhooks({ enabled: false }, ctx);
    expect(disabled.webhooks.map((w) => w.id)).toEqual([ids[1]]);
    const enabled = await fixture.client.listWebhooks({ enabled: true }, ctx);
    expect(enabled.webhooks.map((w) => w.id)).toEqual([ids[2], ids[0]]);
  });

  it('refuses a page size over 100', async () => {
    await expect(fixture.client.listWebhooks({ page: { page: 1, perPage: 101 } }, team)).rejects.toThrow(
      BadRequestError,
    );
  });
});

describe('update', () => {
  it('changes only the fields given', async () => {
    const { webhook } = await create({ description: 'before' });
    const { webhook: updated, secret } = await update(
      { id: webhook.id, events: { values: ['budgets.budget.breached'] } },
      team,
    );
    expect(secret).toBeUndefined();
    expect(updated).toMatchObject({
      url: webhook.url,
      description: 'before',
      events: ['budgets.budget.breached'],
    });
    const moved = await update({ id: webhook.id, url: 'https://other.example.com/x', description: '' }, team);
    expect(moved.webhook).toMatchObject({
      url: 'https://other.example.com/x',
      description: '',
      events: ['budgets.budget.breached'],
    });
  });

  it('disables with reason manual and enables again', async () => {
    const { webhook } = await create();
    const disabled = await update({ id: webhook.id, enabled: false }, team);
    expect(disabled.webhook).toMatchObject({ enabled: false, disabledReason: 'manual' });
    expect(timestampDate(disabled.webhook.disabledAt!).getTime()).toBe(fixture.clock.now().getTime());
    const enabled = await update({ id: webhook.id, enabled: true }, team);
    expect(enabled.webhook).toMatchObject({ enabled: true, disabledReason: '' });
    expect(enabled.webhook.disabledAt).toBeUndefined();
  });

  it('rotates the secret with a 24 h overlap by default, or the TTL asked for', async () => {
    const { webhook, secret: first } = await create();
    const rotated = await update({ id: webhook.id, rotateSecret: true }, team);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(first);
    expect(timestampDate(rotated.webhook.previousSecretExpiresAt!).getTime()).toBe(
      fixture.clock.now().getTime() + 24 * 3600_000,
    );
    const ended = await update({ id: webhook.id, rotateSecret: true, previousSecretTtlSeconds: 0n }, team);
    expect(ended.webhook.previousSecretExpiresAt).toBeUndefined();
    const short = await update({ id: webhook.id, rotateSecret: true, previousSecretTtlSeconds: 60n }, team);
    expect(timestampDate(short.webhook.previousSecretExpiresAt!).getTime()).toBe(
      fixture.clock.now().getTime() + 60_000,
    );
  });

  it('refuses bad fields and changes nothing', async () => {
    const { webhook } = await create();
    expect(
      await fieldsOf(
        update(
          { id: webhook.id, url: 'javascript:alert(1)', events: { values: [] }, rotateSecret: true },
          team,
        ),
      ),
    ).toEqual(['url', 'events']);
    await expect(
      update({ id: webhook.id, rotateSecret: true, previousSecretTtlSeconds: -1n }, team),
    ).rejects.toThrow(BadRequestError);
    expect(await fixture.client.getWebhook({ id: webhook.id }, team)).toEqual(webhook);
  });
});

describe('delete', () => {
  it('removes the endpoint', async () => {
    const { webhook } = await create();
    await fixture.client.deleteWebhook({ id: webhook.id }, team);
    await expect(fixture.client.getWebhook({ id: webhook.id }, team)).rejects.toThrow(NotFoundError);
    await expect(fixture.client.deleteWebhook({ id: webhook.id }, team)).rejects.toThrow(NotFoundError);
  });
});

describe('team isolation', () => {
  it("another team's endpoint is not found for every call", async () => {
    const { webhook } = await create();
    const id = webhook.id;
    const calls = [
      () => fixture.client.getWebhook({ id }, otherTeam),
      () => update({ id, enabled: false, rotateSecret: true }, otherTeam),
      () => fixture.client.deleteWebhook({ id }, otherTeam),
      () => fixture.client.listDeliveries({ webhookId: id }, otherTeam),
      () => fixture.client.retryDelivery({ webhookId: id, deliveryId: newId('webhookMessage') }, otherTeam),
    ];
    for (const call of calls) await expect(call()).rejects.toThrow(NotFoundError);
    expect((await fixture.client.listWebhooks({}, otherTeam)).webhooks).toEqual([]);
    expect(await fixture.client.getWebhook({ id }, team)).toEqual(webhook);
  });

  it('a call without a team is refused', async () => {
    await expect(fixture.client.listWebhooks({}, {})).rejects.toThrow(BadRequestError);
  });

  it('an id of another kind or shape is not found', async () => {
    await expect(fixture.client.getWebhook({ id: newId('project') }, team)).rejects.toThrow(NotFoundError);
    await expect(fixture.client.getWebhook({ id: "whk_'; DROP TABLE webhooks" }, team)).rejects.toThrow(
      NotFoundError,
    );
  });
});
