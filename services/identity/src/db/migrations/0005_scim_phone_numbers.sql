-- A SCIM user's phoneNumbers (RFC 7643 §4.1.2), kept as emails are: a jsonb array of {value, type, primary}.
ALTER TABLE scim_users ADD COLUMN phone_numbers jsonb NOT NULL DEFAULT '[]';
