-- What the status page needs to say a scale set needs attention beyond its state, in a table
-- of its own (scale_sets is at diesel's 32 columns): since when jobs have waited without a
-- break (set by the store when the figure leaves 0, cleared at 0), and the provider's last
-- failure for this scale set (set by the scaler, cleared on success).
CREATE TABLE scale_set_health (
    scale_set_id TEXT PRIMARY KEY NOT NULL REFERENCES scale_sets (id) ON DELETE CASCADE,
    jobs_waiting_since BIGINT,
    provider_error TEXT,
    provider_error_at BIGINT
);
-- The last hour of a scale set's figures, one row a minute written by its worker, for the
-- status page's charts; pruned on write, so at most about 60 rows a scale set.
CREATE TABLE scale_set_samples (
    scale_set_id TEXT NOT NULL REFERENCES scale_sets (id) ON DELETE CASCADE,
    at BIGINT NOT NULL,
    jobs_waiting BIGINT NOT NULL,
    idle BIGINT NOT NULL,
    busy BIGINT NOT NULL,
    starting BIGINT NOT NULL,
    start_latency_ms BIGINT,
    PRIMARY KEY (scale_set_id, at)
);
