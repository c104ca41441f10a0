-- Manual retries asked for so far: an attempt's record clears manual_requested only when no retry was
-- asked for after its claim (the count it claimed with is still the count).
ALTER TABLE deliveries ADD COLUMN manual_requests integer NOT NULL DEFAULT 0;
