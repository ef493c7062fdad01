ALTER TABLE workers DROP COLUMN draining;
