-- One cost posture per team scope and day: today's is rewritten by each read (and the daily sweep), a past
-- day answers from here, and the trend compares with the row of seven days earlier.
CREATE TABLE posture_snapshots (
  team_id text NOT NULL,
  -- '' for the team-wide posture.
  project_id text NOT NULL DEFAULT '',
  date date NOT NULL,
  score integer NOT NULL CHECK (score BETWEEN 0 AND 100),
  breakdown jsonb NOT NULL,
  taken_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, project_id, date)
);
