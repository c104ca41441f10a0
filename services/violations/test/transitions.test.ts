import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { openViolation, startViolations, violationEvents, type Fixture } from './fixture';

let fixture: Fixture;
const teamId = newId('team');
const actor = newId('apiKey');
const ctx = { teamId, actor };

beforeAll(async () => {
  fixture = await startViolations();
});

afterAll(() => fixture?.stop());

type State = 'open' | 'acknowledged' | 'resolved';
type Action = 'acknowledge' | 'resolve';

/** A violation of the team brought to `state` through the API. */
async function violationIn(state: State): Promise<string> {
  const id = await openViolation(fixture, teamId);
  if (state === 'acknowledged') await fixture.client.acknowledgeViolation({ id, note: 'seen', actor }, ctx);
  if (state === 'resolved') await fixture.client.resolveViolation({ id, actor }, ctx);
  return id;
}

const act = (action: Action, id: string, note?: string) =>
  action === 'acknowledge'
    ? fixture.client.acknowledgeViolation({ id, note, actor }, ctx)
    : fixture.client.resolveViolation({ id, note, actor }, ctx);

describe('violation transitions', () => {
  // Every state and action: the table of the design, legal and illegal pairs alike.
  it.each([
    ['open', 'acknowledge', 'acknowledged'],
    ['open', 'resolve', 'resolved'],
    ['acknowledged', 'acknowledge', 409],
    ['acknowledged', 'resolve', 'resolved'],
    ['resolved', 'acknowledge', 409],
    ['resolved', 'resolve', 409],
  ] as const)('%s, %s → %s', async (from, action, expected) => {
    const id = await violationIn(from);
    const before = await fixture.client.getViolation({ id }, ctx);
    const eventsBefore = await violationEvents(fixture, { violationId: id });
    if (expected === 409) {
      const error = await act(action, id, 'again').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConflictError);
      expect((error as ConflictError).message).toContain(`is ${from}`);
      expect(await fixture.client.getViolation({ id }, ctx)).toEqual(before);
      expect(await violationEvents(fixture, { violationId: id })).toEqual(eventsBefore);
      return;
    }
    const after = await act(action, id, 'a note');
    expect(after.status).toBe(expected);
    expect(await fixture.client.getViolation({ id }, ctx)).toEqual(after);
    const written = await violationEvents(fixture, { violationId: id });
    expect(
      written.slice(eventsBefore.length).map((e) => [e.type, e.data.status, e.data.previousStatus]),
    ).toEqual([[`violations.violation.${expected}`, expected, from]]);
  });

  it('acknowledge keeps the note with the actor and the time', async () => {
    const id = await violationIn('open');
    const startedAt = Date.now();
    const acknowledged = await fixture.client.acknowledgeViolation(
      { id, note: 'Load test until Friday.', actor },
      ctx,
    );
    expect(acknowledged).toMatchObject({
      status: 'acknowledged',
      acknowledgedBy: actor,
      acknowledgeNote: 'Load test until Friday.',
    });
    const at = timestampDate(acknowledged.acknowledgedAt!).getTime();
    expect(at).toBeGreaterThanOrEqual(startedAt - 1000);
    expect(at).toBeLessThanOrEqual(Date.now());
    expect(acknowledged.resolvedAt).toBeUndefined();

    const resolved = await fixture.client.resolveViolation({ id, actor: 'usr-2' }, ctx);
    expect(resolved).toMatchObject({
      status: 'resolved',
      acknowledgedBy: actor,
      acknowledgeNote: 'Load test until Friday.',
      resolvedBy: 'usr-2',
    });
    expect(resolved.resolveNote).toBeUndefined();
    expect(resolved.resolvedAt).toBeDefined();
  });

  it('takes the actor from the call metadata when the request names none', async () => {
    const id = await violationIn('open');
    const acknowledged = await fixture.client.acknowledgeViolation({ id }, { teamId, actor: 'key_from_ctx' });
    expect(acknowledged.acknowledgedBy).toBe('key_from_ctx');
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['too long', 'x'.repeat(2001)],
    ['with a NUL', 'a\u0000b'],
  ])('refuses a note that is %s with 422 on note, and changes nothing', async (_case, note) => {
    const id = await violationIn('open');
    for (const action of ['acknowledge', 'resolve'] as const) {
      const error = await act(action, id, note).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.map((d) => d.field)).toEqual(['note']);
    }
    expect((await fixture.client.getViolation({ id }, ctx)).status).toBe('open');
  });

  it('accepts a note of 2000 characters, emoji counted as one', async () => {
    const id = await violationIn('open');
    const note = '💸'.repeat(2000);
    expect((await act('acknowledge', id, note)).acknowledgeNote).toBe(note);
  });

  it.each(['acknowledge', 'resolve'] as const)(
    "%s of another team's or an unknown violation is 404",
    async (action) => {
      const theirs = await openViolation(fixture, newId('team'));
      for (const id of [theirs, newId('violation'), 'not-an-id']) {
        await expect(act(action, id)).rejects.toBeInstanceOf(NotFoundError);
      }
      const { rows } = await fixture.db.query<{ status: string }>(
        'SELECT status FROM violations WHERE id = $1',
        [theirs],
      );
      expect(rows[0]!.status).toBe('open');
    },
  );
});
