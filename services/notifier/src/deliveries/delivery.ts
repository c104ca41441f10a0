export const deliveryStatuses = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];

export interface DeliveryAttempt {
  attempt: number;
  attemptedAt: Date;
  /** 0 when no answer came (timeout, refused connection, refused address). */
  responseStatus: number;
  latencyMs: number;
  responseExcerpt: string;
  outcome: 'success' | 'failure';
  trigger: 'scheduled' | 'manual';
}

export interface Delivery {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  attemptLog: DeliveryAttempt[];
  createdAt: Date;
  updatedAt: Date;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  attempted_at: Date;
  response_status: number;
  latency_ms: number;
  response_excerpt: string;
  outcome: 'success' | 'failure';
  trigger: 'scheduled' | 'manual';
}

export const deliveryColumns = `d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempts,
  d.next_attempt_at, d.created_at, d.updated_at`;

export const toAttempt = (row: AttemptRow): DeliveryAttempt => ({
  attempt: row.attempt,
  attemptedAt: new Date(row.attempted_at),
  responseStatus: row.response_status,
  latencyMs: row.latency_ms,
  responseExcerpt: row.response_excerpt,
  outcome: row.outcome,
  trigger: row.trigger,
});

export const toDelivery = (row: DeliveryRow, attempts: AttemptRow[]): Delivery => ({
  id: row.id,
  webhookId: row.webhook_id,
  eventId: row.event_id,
  eventType: row.event_type,
  status: row.status,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at === null ? null : new Date(row.next_attempt_at),
  attemptLog: attempts.filter((a) => a.delivery_id === row.id).map(toAttempt),
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at),
});

/** The channel a new or retried delivery is announced on, so dispatchers wake at once. */
export const deliveriesChannel = 'notifier_deliveries';
