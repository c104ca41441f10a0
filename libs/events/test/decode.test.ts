import { describe, expect, it } from 'vitest';
import { decodeEvent, UndecodableEventError } from '../src/decode';
import { memoryInbox } from '../src/inbox';

const headers = (overrides: Record<string, string | undefined> = {}): [string, string][] =>
  Object.entries({
    'ce-specversion': '1.0',
    'ce-id': 'evt_1',
    'ce-source': 'scanner',
    'ce-type': 'scanner.scan.completed',
    'ce-time': '2026-11-23T06:00:00.000Z',
    'ce-subject': 'scn_1',
    'content-type': 'application/json',
    ...overrides,
  }).filter((entry): entry is [string, string] => entry[1] !== undefined);

const body = JSON.stringify({ scanId: 'scn_1', teamId: 'team_1', findingsCount: 3, addedLater: true });

describe('decodeEvent', () => {
  it('reads the attributes from the headers (any case) and the payload as the proto message', () => {
    const upper = headers().map(([key, value]): [string, string] => [key.toUpperCase(), value]);
    const { data, attributes } = decodeEvent('scanner.scan.completed', upper, body);
    expect(data).toMatchObject({
      $typeName: 'costgov.events.v1.ScanFinished',
      scanId: 'scn_1',
      teamId: 'team_1',
      findingsCount: 3,
      status: '', // absent fields take their defaults
    });
    expect(attributes).toEqual({
      specversion: '1.0',
      id: 'evt_1',
      source: 'scanner',
      type: 'scanner.scan.completed',
      time: '2026-11-23T06:00:00.000Z',
      subject: 'scn_1',
      datacontenttype: 'application/json',
    });
  });

  it.each([
    ['a missing attribute', headers({ 'ce-id': undefined }), body, /ce-id/],
    ['another spec version', headers({ 'ce-specversion': '0.3' }), body, /specversion/],
    ['another type', headers({ 'ce-type': 'scanner.scan.failed' }), body, /scanner.scan.failed/],
    ['a body that is not JSON', headers(), '{', /not JSON/],
    ['a payload of the wrong shape', headers(), JSON.stringify({ findingsCount: 'many' }), /ScanFinished/],
  ])('refuses %s as undecodable', (_case, given, payload, message) => {
    const decode = () => decodeEvent('scanner.scan.completed', given, payload);
    expect(decode).toThrow(UndecodableEventError);
    expect(decode).toThrow(message);
  });
});

describe('memoryInbox', () => {
  it('runs an effect once per consumer and event id; a failed effect is not recorded', async () => {
    const inbox = memoryInbox();
    const runs: string[] = [];
    const effect = (name: string) => async () => void runs.push(name);
    expect(await inbox.once('billing', 'evt_1', effect('first'))).toBe(true);
    expect(await inbox.once('billing', 'evt_1', effect('again'))).toBe(false);
    expect(await inbox.once('audit', 'evt_1', effect('other consumer'))).toBe(true);
    await expect(
      inbox.once('billing', 'evt_2', async () => {
        throw new Error('down');
      }),
    ).rejects.toThrow('down');
    expect(await inbox.once('billing', 'evt_2', effect('retried'))).toBe(true);
    expect(runs).toEqual(['first', 'other consumer', 'retried']);
  });

  it('lets a concurrent delivery of the same event wait for the first', async () => {
    const inbox = memoryInbox();
    let release!: () => void;
    const first = inbox.once('billing', 'evt_1', () => new Promise<void>((resolve) => (release = resolve)));
    const second = inbox.once('billing', 'evt_1', async () => undefined);
    release();
    expect(await Promise.all([first, second])).toEqual([true, false]);
  });
});
