-- The worker registry: one row per worker process, kept alive by its heartbeats, so workers
-- sharing a database can count each other and spread the scale sets' leases.
CREATE TABLE workers (
    name TEXT PRIMARY KEY NOT NULL,
    expires_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);
