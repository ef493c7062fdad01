ALTER TABLE scale_set_health DROP COLUMN retry_requested_at;
