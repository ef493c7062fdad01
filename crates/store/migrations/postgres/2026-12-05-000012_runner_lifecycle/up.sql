-- Issue 33: the warm pool's scale-down delay and the runner lifetimes, in whole seconds
-- (0: retired at once / off, which is what rows written before them meant).
ALTER TABLE scale_sets ADD COLUMN scale_down_delay_secs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE scale_sets ADD COLUMN max_idle_lifetime_secs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE scale_sets ADD COLUMN max_lifetime_secs BIGINT NOT NULL DEFAULT 0;
