ALTER TABLE instances DROP COLUMN removal_requested_at;
