import { limitOffset, pageMeta, pageOf, type Db, type PageMeta, type Queryable } from '@costgov/db';
import type { KeyedEffect } from '@costgov/runtime';
import { BadRequestError, NotFoundError, Violations } from '@costgov/errors';
import { looksLikeId, type IdGenerator } from '@costgov/ids';
import type { AddressPolicy } from '../deliveries/address-policy';
import { newSecret } from './secret';
import {
  checkDescription,
  checkEvents,
  checkUrl,
  defaultPreviousSecretTtlSeconds,
  maxPreviousSecretTtlSeconds,
} from './validation';
import { toWebhook, webhookColumns, type Webhook, type WebhookRow } from './webhook';

export interface CreateWebhookInput {
  url: string;
  events: readonly string[];
  description: string;
}

/** Fields left undefined are not changed. */
export interface UpdateWebhookInput {
  url?: string;
  events?: readonly string[];
  description?: string;
  enabled?: boolean;
  rotateSecret?: boolean;
  previousSecretTtlSeconds?: number;
}

export interface ListWebhooksInput {
  enabled?: boolean;
  page?: number;
  perPage?: number;
}

/** A webhook with the secret that was just made (on create and rotation: shown this once). */
export interface WebhookWithSecret {
  webhook: Webhook;
  secret?: string;
}

/** An id that cannot be a webhook's is not found, without a query. */
export function checkWebhookId(id: string): void {
  if (!looksLikeId('webhook', id)) throw new NotFoundError('Webhook', id);
}

/** Finds a webhook of the team, optionally locking it; another team's is not found. */
export async function findWebhook(
  tx: Queryable,
  teamId: string,
  id: string,
  lock = false,
): Promise<WebhookRow> {
  checkWebhookId(id);
  const { rows } = await tx.query<WebhookRow>(
    `SELECT ${webhookColumns} FROM webhooks w WHERE w.team_id = $1 AND w.id = $2${lock ? ' FOR UPDATE' : ''}`,
    [teamId, id],
  );
  if (!rows[0]) throw new NotFoundError('Webhook', id);
  return rows[0];
}

function checkTtl(seconds: number | undefined): number {
  if (seconds === undefined) return defaultPreviousSecretTtlSeconds;
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > maxPreviousSecretTtlSeconds) {
    throw new BadRequestError(`previous_secret_ttl_seconds ${seconds} is out of range.`, [
      {
        field: 'previous_secret_ttl_seconds',
        message: `must be an integer from 0 to ${maxPreviousSecretTtlSeconds}`,
      },
    ]);
  }
  return seconds;
}

/** Webhook endpoints of a team: create, read, list, change (and rotate the secret), delete. */
export function webhooksFactory({
  db,
  newId,
  now,
  policy,
}: {
  db: Db;
  newId: IdGenerator;
  now: () => Date;
  policy: AddressPolicy;
}) {
  /** `effect`: the caller's Idempotency-Key, recorded with the endpoint (libs/runtime idempotency.ts). */
  async function createWebhook(
    teamId: string,
    input: CreateWebhookInput,
    effect?: KeyedEffect<WebhookWithSecret>,
  ): Promise<WebhookWithSecret> {
    const violations = new Violations();
    checkUrl(violations, input.url, policy);
    const events = checkEvents(violations, input.events);
    checkDescription(violations, input.description);
    violations.throwIfAny();
    const secret = newSecret();
    const at = now();
    return db.transaction(async (tx) => {
      const { rows } = await tx.query<WebhookRow>(
        `INSERT INTO webhooks AS w (id, team_id, url, events, description, secret, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING ${webhookColumns}`,
        [newId('webhook'), teamId, input.url, events, input.description, secret, at],
      );
      const created = { webhook: toWebhook(rows[0]!, at), secret };
      await effect?.record(tx, created);
      return created;
    });
  }

  const getWebhook = async (teamId: string, id: string): Promise<Webhook> =>
    toWebhook(await findWebhook(db, teamId, id), now());

  async function listWebhooks(
    teamId: string,
    input: ListWebhooksInput,
  ): Promise<{ webhooks: Webhook[]; meta: PageMeta }> {
    const page = pageOf(input);
    const params: unknown[] = [teamId];
    const filter = `w.team_id = $1${input.enabled === undefined ? '' : ` AND w.enabled = $${params.push(input.enabled)}`}`;
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks w WHERE ${filter}`, params),
      db.query<WebhookRow>(
        `SELECT ${webhookColumns} FROM webhooks w WHERE ${filter}
         ORDER BY w.created_at DESC, w.id DESC LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    const at = now();
    return {
      webhooks: list.rows.map((row) => toWebhook(row, at)),
      meta: pageMeta(page, count.rows[0]!.n),
    };
  }

  async function updateWebhook(
    teamId: string,
    id: string,
    input: UpdateWebhookInput,
  ): Promise<WebhookWithSecret> {
    checkWebhookId(id);
    const violations = new Violations();
    if (input.url !== undefined) checkUrl(violations, input.url, policy);
    const events = input.events === undefined ? undefined : checkEvents(violations, input.events);
    if (input.description !== undefined) checkDescription(violations, input.description);
    violations.throwIfAny();
    const ttlSeconds = checkTtl(input.previousSecretTtlSeconds);
    return db.transaction(async (tx) => {
      const current = await findWebhook(tx, teamId, id, true);
      const at = now();
      const set: string[] = [];
      const params: unknown[] = [teamId, id];
      const assign = (column: string, value: unknown) => set.push(`${column} = $${params.push(value)}`);
      if (input.url !== undefined) assign('url', input.url);
      if (events !== undefined) assign('events', events);
      if (input.description !== undefined) assign('description', input.description);
      if (input.enabled === true && !current.enabled) {
        // A fresh start: the 5 days of failures that disable an endpoint count from now.
        set.push('enabled = true', 'disabled_reason = NULL', 'disabled_at = NULL', 'failing_since = NULL');
      } else if (input.enabled === false && current.enabled) {
        set.push('enabled = false', `disabled_reason = 'manual'`);
        assign('disabled_at', at);
      }
      let secret: string | undefined;
      const overlapUntil = ttlSeconds > 0 ? new Date(at.getTime() + ttlSeconds * 1000) : null;
      if (input.rotateSecret) {
        secret = newSecret();
        // The secret being replaced keeps signing beside the new one until the overlap ends.
        set.push(overlapUntil ? 'previous_secret = secret' : 'previous_secret = NULL');
        assign('secret', secret);
        assign('previous_secret_expires_at', overlapUntil);
      } else if (input.previousSecretTtlSeconds !== undefined) {
        // Without a rotation the TTL moves the end of the current overlap (0 ends it now).
        if (overlapUntil)
          set.push(
            `previous_secret_expires_at = CASE WHEN previous_secret IS NULL THEN NULL ELSE $${params.push(overlapUntil)}::timestamptz END`,
          );
        else set.push('previous_secret = NULL', 'previous_secret_expires_at = NULL');
      }
      if (set.length === 0) return { webhook: toWebhook(current, at) };
      assign('updated_at', at);
      const { rows } = await tx.query<WebhookRow>(
        `UPDATE webhooks w SET ${set.join(', ')} WHERE w.team_id = $1 AND w.id = $2 RETURNING ${webhookColumns}`,
        params,
      );
      return { webhook: toWebhook(rows[0]!, at), secret };
    });
  }

  /** Removes the endpoint with its deliveries and their attempts. */
  async function deleteWebhook(teamId: string, id: string): Promise<void> {
    checkWebhookId(id);
    const { rowCount } = await db.query('DELETE FROM webhooks WHERE team_id = $1 AND id = $2', [teamId, id]);
    if (rowCount === 0) throw new NotFoundError('Webhook', id);
  }

  return { createWebhook, getWebhook, listWebhooks, updateWebhook, deleteWebhook };
}

export type Webhooks = ReturnType<typeof webhooksFactory>;
