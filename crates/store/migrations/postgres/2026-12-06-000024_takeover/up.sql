-- A scale set imported from GARM keeps its takeover note (issue 37): GARM's controller id, the
-- GitHub id it ran the set under, its pool id and runner prefix, as JSON; NULL for every other.
ALTER TABLE scale_sets ADD COLUMN takeover TEXT;
