-- One entry per change (issue 29): an entry that repeats the scale set's newest one (same kind
-- and reason) is counted on it instead of appended, so a refusal rechecked every few minutes
-- no longer pushes the rest of the trail out of retention. `at` stays the first time,
-- `last_at` is the latest, `count` how many times in a row it happened.
ALTER TABLE events ADD COLUMN count BIGINT NOT NULL DEFAULT 1;
ALTER TABLE events ADD COLUMN last_at BIGINT NOT NULL DEFAULT 0;
UPDATE events SET last_at = at;
