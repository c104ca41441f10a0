-- Request limits of a team; NULL means the platform default.
ALTER TABLE teams
  ADD COLUMN api_requests_per_minute integer CHECK (api_requests_per_minute > 0),
  ADD COLUMN api_concurrent_requests integer CHECK (api_concurrent_requests > 0),
  ADD COLUMN scim_requests_per_minute integer CHECK (scim_requests_per_minute > 0),
  ADD COLUMN scim_concurrent_requests integer CHECK (scim_concurrent_requests > 0);

CREATE TABLE scim_tokens (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  name text NOT NULL,
  secret_hash text NOT NULL UNIQUE,
  prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX scim_tokens_team ON scim_tokens (team_id, created_at);

-- Trigram indexes keep SCIM `co` filters fast. The extension is database-wide: always in public, and two
-- services (or test runs) creating it at once must not fail.
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
EXCEPTION WHEN unique_violation OR duplicate_object THEN NULL;
END $$;

CREATE TABLE scim_users (
  id uuid PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  user_name text NOT NULL,
  external_id text,
  given_name text,
  family_name text,
  formatted_name text,
  display_name text,
  emails jsonb NOT NULL DEFAULT '[]',
  active boolean NOT NULL DEFAULT true,
  role text NOT NULL,
  -- Attributes of the enterprise extension, kept as the identity provider sent them.
  enterprise jsonb NOT NULL DEFAULT '{}',
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- userName is unique per team regardless of case; eq uses this index, sw the pattern one, co the trigram one.
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (team_id, lower(user_name));
CREATE INDEX scim_users_user_name_prefix ON scim_users (team_id, lower(user_name) text_pattern_ops);
CREATE INDEX scim_users_user_name_trgm ON scim_users USING gin (lower(user_name) public.gin_trgm_ops);
CREATE INDEX scim_users_external_id ON scim_users (team_id, external_id);
CREATE INDEX scim_users_family_name ON scim_users (team_id, lower(family_name) text_pattern_ops);
CREATE INDEX scim_users_given_name ON scim_users (team_id, lower(given_name) text_pattern_ops);
CREATE INDEX scim_users_created ON scim_users (team_id, created_at, id);
CREATE INDEX scim_users_emails ON scim_users USING gin (emails jsonb_path_ops);

CREATE TABLE scim_groups (
  id uuid PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  display_name text NOT NULL,
  external_id text,
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX scim_groups_display_name ON scim_groups (team_id, lower(display_name));
CREATE INDEX scim_groups_created ON scim_groups (team_id, created_at, id);

CREATE TABLE scim_group_members (
  group_id uuid NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES scim_users (id) ON DELETE CASCADE,
  added_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members (user_id);
