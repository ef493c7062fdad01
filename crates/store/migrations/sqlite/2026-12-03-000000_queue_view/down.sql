ALTER TABLE scale_sets DROP COLUMN jobs_waiting;
ALTER TABLE scale_sets DROP COLUMN last_message_at;
