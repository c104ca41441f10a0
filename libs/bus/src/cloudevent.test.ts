import { describe, expect, it } from 'vitest';
import { fromWire, toWire, type CloudEvent } from './cloudevent';
import { typeMatches } from './patterns';

const event: CloudEvent = {
  specversion: '1.0',
  id: 'evt_01',
  source: 'budgets',
  type: 'budgets.budget.breached',
  subject: 'bdg_1',
  time: '2025-01-02T03:04:05.000Z',
  datacontenttype: 'application/json',
  data: { amount: 12.5, tags: ['a'] },
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
};

describe('binary-mode mapping', () => {
  it('puts the envelope in headers and the data in the body', () => {
    expect(toWire(event, 'costgov')).toEqual({
      subject: 'costgov.budgets.budget.breached',
      headers: {
        'ce-specversion': '1.0',
        'ce-id': 'evt_01',
        'ce-source': 'budgets',
        'ce-type': 'budgets.budget.breached',
        'ce-subject': 'bdg_1',
        'ce-time': '2025-01-02T03:04:05.000Z',
        'content-type': 'application/json',
        traceparent: event.traceparent,
      },
      body: '{"amount":12.5,"tags":["a"]}',
    });
  });

  it('reads back what it wrote, matching header names in any case', () => {
    const { headers, body } = toWire(event, 'costgov');
    expect(fromWire(headers, body)).toEqual(event);
    const shouted = Object.fromEntries(
      Object.entries(headers).map(([key, value]) => [key.toUpperCase(), value]),
    );
    expect(fromWire(shouted, body)).toEqual(event);
  });

  it('omits optional attributes that are absent', () => {
    const { subject: _subject, traceparent: _traceparent, ...bare } = event;
    const { headers, body } = toWire(bare, 'ns');
    expect(Object.keys(headers)).not.toContain('ce-subject');
    expect(Object.keys(headers)).not.toContain('traceparent');
    expect(fromWire(headers, body)).toEqual(bare);
  });

  it.each([
    ['ce-id', /header 'ce-id' is missing/],
    ['ce-type', /header 'ce-type' is missing/],
  ])('refuses a message without %s', (header, error) => {
    const { headers, body } = toWire(event, 'costgov');
    delete headers[header];
    expect(() => fromWire(headers, body)).toThrow(error);
  });

  it('refuses another spec version', () => {
    const { headers, body } = toWire(event, 'costgov');
    expect(() => fromWire({ ...headers, 'ce-specversion': '0.3' }, body)).toThrow(/ce-specversion '0.3'/);
  });
});

describe('type patterns', () => {
  it.each([
    ['budgets.project.deleted', 'budgets.project.deleted', true],
    ['budgets.project.deleted', 'budgets.project.created', false],
    ['budgets.project.*', 'budgets.project.deleted', true],
    ['budgets.project.*', 'budgets.project', false],
    ['budgets.project.*', 'budgets.project.deleted.extra', false],
    ['budgets.*.deleted', 'budgets.budget.deleted', true],
    ['budgets.>', 'budgets.project.deleted', true],
    ['budgets.>', 'budgets.x', true],
    ['budgets.>', 'budgets', false],
    ['budgets.>', 'scanner.scan.completed', false],
    ['budgets.project', 'budgets.project.deleted', false],
  ])('%s matches %s: %s', (pattern, type, expected) => {
    expect(typeMatches(pattern, type)).toBe(expected);
  });
});
