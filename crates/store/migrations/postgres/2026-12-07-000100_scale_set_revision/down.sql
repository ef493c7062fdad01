DROP TRIGGER scale_set_health_revision ON scale_set_health;
DROP TRIGGER scale_sets_revision ON scale_sets;
DROP FUNCTION scale_set_next_revision();
DROP SEQUENCE scale_set_revision;
DROP INDEX scale_set_health_by_revision;
DROP INDEX scale_sets_by_revision;
ALTER TABLE scale_set_health DROP COLUMN revision;
ALTER TABLE scale_sets DROP COLUMN revision;
