CREATE TABLE teams (
  id text PRIMARY KEY,
  name text NOT NULL,
  plan text NOT NULL CHECK (plan IN ('free', 'team', 'enterprise')),
  default_role text NOT NULL DEFAULT 'member',
  scan_credits bigint NOT NULL DEFAULT 0 CHECK (scan_credits >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX teams_name_key ON teams (lower(name));

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  name text NOT NULL,
  scopes text[] NOT NULL,
  -- SHA-256 of the whole secret, hex; the secret itself is never stored.
  secret_hash text NOT NULL UNIQUE,
  prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_team ON api_keys (team_id, created_at);
