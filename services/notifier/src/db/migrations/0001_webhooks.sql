-- Webhook endpoints of a team. `secret` signs every delivery; `previous_secret` signs alongside it until
-- `previous_secret_expires_at` (rotation overlap). `failing_since` is the first failed attempt since the
-- endpoint's last success: 5 days of that disables it with reason `failing`.
CREATE TABLE webhooks (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  description text NOT NULL DEFAULT '',
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text CHECK (disabled_reason IN ('manual', 'failing')),
  disabled_at timestamptz,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  failing_since timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CONSTRAINT webhooks_disabled_reason CHECK (enabled = (disabled_reason IS NULL))
);
CREATE INDEX webhooks_team_created ON webhooks (team_id, created_at, id);

-- One delivery per endpoint and event; its id is the webhook-id header of every attempt. `payload` is
-- the exact body sent (the CloudEvent), so every attempt signs the same bytes. `lease_until` and
-- `lease_token` mark a delivery a dispatcher has claimed; another takes it once the lease ran out.
CREATE TABLE deliveries (
  id text PRIMARY KEY,
  webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  team_id text NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  payload text NOT NULL,
  traceparent text,
  tracestate text,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  -- Attempts of the retry schedule (manual ones are not counted): 8 of them fail the delivery.
  scheduled_attempts integer NOT NULL DEFAULT 0,
  manual_requested boolean NOT NULL DEFAULT false,
  next_attempt_at timestamptz,
  lease_until timestamptz,
  lease_token text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CONSTRAINT deliveries_webhook_event UNIQUE (webhook_id, event_id),
  CONSTRAINT deliveries_pending_due CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_webhook_created ON deliveries (webhook_id, created_at, id);

CREATE TABLE delivery_attempts (
  delivery_id text NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  attempted_at timestamptz NOT NULL,
  response_status integer NOT NULL,
  latency_ms integer NOT NULL,
  response_excerpt text NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('success', 'failure')),
  trigger text NOT NULL CHECK (trigger IN ('scheduled', 'manual')),
  PRIMARY KEY (delivery_id, attempt)
);
