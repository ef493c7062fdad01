DROP TRIGGER scale_set_health_revision_update;
DROP TRIGGER scale_set_health_revision_insert;
DROP TRIGGER scale_sets_revision_update;
DROP TRIGGER scale_sets_revision_insert;
DROP TABLE scale_set_revision;
DROP INDEX scale_set_health_by_revision;
DROP INDEX scale_sets_by_revision;
ALTER TABLE scale_set_health DROP COLUMN revision;
ALTER TABLE scale_sets DROP COLUMN revision;
