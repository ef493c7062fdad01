-- What the status page shows about a scale set's queue: when its cursor last moved (a message
-- was handled) and how many jobs the last statistics said were waiting for a runner.
ALTER TABLE scale_sets ADD COLUMN last_message_at BIGINT;
ALTER TABLE scale_sets ADD COLUMN jobs_waiting BIGINT NOT NULL DEFAULT 0;
