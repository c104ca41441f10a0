-- FOCUS columns the scanner's rules read (idle IPs, previous generations, extended support, commitments,
-- capacity reservations): text, nullable (capacity reservations arrive in FOCUS 1.1), no index.
ALTER TABLE cost_records
  ADD COLUMN charge_description text,
  ADD COLUMN charge_class text,
  ADD COLUMN pricing_category text,
  ADD COLUMN commitment_discount_id text,
  ADD COLUMN commitment_discount_category text,
  ADD COLUMN commitment_discount_status text,
  ADD COLUMN commitment_discount_type text,
  ADD COLUMN capacity_reservation_id text,
  ADD COLUMN capacity_reservation_status text;
