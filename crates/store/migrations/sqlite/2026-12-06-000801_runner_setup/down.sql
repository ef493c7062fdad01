ALTER TABLE scale_sets DROP COLUMN runner_setup;
