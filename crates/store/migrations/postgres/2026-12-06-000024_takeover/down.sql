ALTER TABLE scale_sets DROP COLUMN takeover;
