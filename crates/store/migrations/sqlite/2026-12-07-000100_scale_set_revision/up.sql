-- A revision per scale set, so a worker's watch reads only the rows written since its last
-- read instead of every row every tick (issue 53: eight workers each reading 100,000 rows
-- every 10 s held gigabytes and most of PostgreSQL's CPU). Every write of a scale set or of
-- its health row takes the next value of one counter; SQLite runs one writer at a time, so
-- the values are committed in order. Rows written before this migration keep 0: a watch's
-- first read takes every row whatever its revision.
ALTER TABLE scale_sets ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE scale_set_health ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX scale_sets_by_revision ON scale_sets (revision);
CREATE INDEX scale_set_health_by_revision ON scale_set_health (revision);
CREATE TABLE scale_set_revision (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    value BIGINT NOT NULL
);
INSERT INTO scale_set_revision (singleton, value) VALUES (1, 0);
-- What a watch needs beside the revisions: which database this is (a watch whose database
-- was replaced under it, wiped or another, reads everything again: the revisions of another
-- database say nothing of its copy) and how many scale sets were ever deleted (it lists the
-- ids only when that moved; a count of the rows would scan the table at every read).
CREATE TABLE scale_set_watch (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    incarnation TEXT NOT NULL,
    deletions BIGINT NOT NULL
);
INSERT INTO scale_set_watch (singleton, incarnation, deletions)
    VALUES (1, lower(hex(randomblob(16))), 0);
CREATE TRIGGER scale_sets_deletion AFTER DELETE ON scale_sets
BEGIN
    UPDATE scale_set_watch SET deletions = deletions + 1;
END;
-- AFTER triggers: SQLite's BEFORE triggers cannot set NEW. The WHEN keeps the trigger's own
-- UPDATE from counting twice should recursive triggers ever be turned on.
CREATE TRIGGER scale_sets_revision_insert AFTER INSERT ON scale_sets
BEGIN
    UPDATE scale_set_revision SET value = value + 1;
    UPDATE scale_sets SET revision = (SELECT value FROM scale_set_revision) WHERE id = NEW.id;
END;
CREATE TRIGGER scale_sets_revision_update AFTER UPDATE ON scale_sets
WHEN NEW.revision = OLD.revision
BEGIN
    UPDATE scale_set_revision SET value = value + 1;
    UPDATE scale_sets SET revision = (SELECT value FROM scale_set_revision) WHERE id = NEW.id;
END;
CREATE TRIGGER scale_set_health_revision_insert AFTER INSERT ON scale_set_health
BEGIN
    UPDATE scale_set_revision SET value = value + 1;
    UPDATE scale_set_health SET revision = (SELECT value FROM scale_set_revision)
        WHERE scale_set_id = NEW.scale_set_id;
END;
CREATE TRIGGER scale_set_health_revision_update AFTER UPDATE ON scale_set_health
WHEN NEW.revision = OLD.revision
BEGIN
    UPDATE scale_set_revision SET value = value + 1;
    UPDATE scale_set_health SET revision = (SELECT value FROM scale_set_revision)
        WHERE scale_set_id = NEW.scale_set_id;
END;
