-- Days of data a finding's monthly figure was projected from (NULL: the finding carries no monthly figure).
ALTER TABLE findings ADD COLUMN projected_from_days integer;
