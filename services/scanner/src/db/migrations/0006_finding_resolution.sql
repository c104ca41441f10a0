-- How a scan resolved a finding, for the posture's recommendation adoption (docs/decisions.md
-- "Recommendation adoption: what a person did"): true when the resolving scan still read cost of the
-- finding's resource (still billed, the rule no longer reports it: the problem was dealt with); false when
-- the resource was not among the scan's resources (no longer billed in its window, its connection left the
-- project, beyond the costliest resources read, or no single resource: a connection, a tag key). NULL
-- unless resolved; rows resolved before this column existed stay NULL (unknown: counted as false).
ALTER TABLE findings ADD COLUMN resolved_with_resource boolean;
