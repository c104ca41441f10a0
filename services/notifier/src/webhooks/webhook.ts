/** A webhook endpoint as the service hands it out (never with its secrets). */
export interface Webhook {
  id: string;
  teamId: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabledReason: 'manual' | 'failing' | null;
  disabledAt: Date | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookRow {
  id: string;
  team_id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: 'manual' | 'failing' | null;
  disabled_at: Date | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const webhookColumns = `w.id, w.team_id, w.url, w.events, w.description, w.enabled, w.disabled_reason,
  w.disabled_at, w.previous_secret_expires_at, w.created_at, w.updated_at`;

const date = (value: Date | string | null): Date | null => (value === null ? null : new Date(value));

/**
 * The previous secret's expiry is shown only while it still signs; `now` decides, so a past expiry
 * reads as no overlap.
 */
export const toWebhook = (row: WebhookRow, now: Date): Webhook => {
  const previous = date(row.previous_secret_expires_at);
  return {
    id: row.id,
    teamId: row.team_id,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: date(row.disabled_at),
    previousSecretExpiresAt: previous && previous > now ? previous : null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
};
