ALTER TABLE scale_sets DROP COLUMN max_lifetime_secs;
ALTER TABLE scale_sets DROP COLUMN max_idle_lifetime_secs;
ALTER TABLE scale_sets DROP COLUMN scale_down_delay_secs;
