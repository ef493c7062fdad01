-- A revision per scale set, so a worker's watch reads only the rows written since its last
-- read instead of every row every tick (issue 53: eight workers each reading 100,000 rows
-- every 10 s held gigabytes and most of PostgreSQL's CPU). Every write of a scale set or of
-- its health row takes the next value of one sequence. Values are taken before commit, so a
-- reader can see a higher one committed before a lower one: the watch reads a few ticks back
-- (crates/control/src/watch.rs). Rows written before this migration keep 0: a watch's first
-- read takes every row whatever its revision. Each table gets its own trigger (a health write
-- does not touch its scale set's row): a trigger writing the other table would lock the two
-- rows in the opposite order of `record_progress` and could deadlock with it.
ALTER TABLE scale_sets ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE scale_set_health ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX scale_sets_by_revision ON scale_sets (revision);
CREATE INDEX scale_set_health_by_revision ON scale_set_health (revision);
CREATE SEQUENCE scale_set_revision;
CREATE FUNCTION scale_set_next_revision() RETURNS trigger AS $$
BEGIN
    NEW.revision := nextval('scale_set_revision');
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER scale_sets_revision BEFORE INSERT OR UPDATE ON scale_sets
    FOR EACH ROW EXECUTE FUNCTION scale_set_next_revision();
CREATE TRIGGER scale_set_health_revision BEFORE INSERT OR UPDATE ON scale_set_health
    FOR EACH ROW EXECUTE FUNCTION scale_set_next_revision();
-- What a watch needs beside the revisions: which database this is (a watch whose database
-- was replaced under it, wiped or another, reads everything again: the revisions of another
-- database say nothing of its copy) and how many scale sets were ever deleted (it lists the
-- ids only when that moved; a count of the rows would scan the table at every read). Deletes
-- are rare (an operator's), so one row updated by each is no contention.
CREATE TABLE scale_set_watch (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    incarnation TEXT NOT NULL,
    deletions BIGINT NOT NULL
);
INSERT INTO scale_set_watch (singleton, incarnation, deletions)
    VALUES (1, md5(random()::text || clock_timestamp()::text), 0);
CREATE FUNCTION scale_set_count_deletion() RETURNS trigger AS $$
BEGIN
    UPDATE scale_set_watch SET deletions = deletions + 1;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER scale_sets_deletion AFTER DELETE ON scale_sets
    FOR EACH ROW EXECUTE FUNCTION scale_set_count_deletion();
