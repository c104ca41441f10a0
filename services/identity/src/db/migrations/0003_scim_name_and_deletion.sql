-- Every sub-attribute of a SCIM user's name (RFC 7643 §4.1.1); given, family and formatted already exist.
ALTER TABLE scim_users
  ADD COLUMN middle_name text,
  ADD COLUMN honorific_prefix text,
  ADD COLUMN honorific_suffix text,
  -- Set by SCIM DELETE: the user is deactivated and kept, and SCIM no longer sees them.
  ADD COLUMN deleted_at timestamptz;

-- userName is unique among the users SCIM sees: a deleted user's userName is free for a new user.
DROP INDEX scim_users_user_name;
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (team_id, lower(user_name)) WHERE deleted_at IS NULL;
