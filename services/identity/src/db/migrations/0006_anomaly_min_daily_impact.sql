-- The team's minimum daily impact for the scanner's anomaly rules (NULL: the scanner's default).
ALTER TABLE teams ADD COLUMN anomaly_min_daily_impact double precision;
