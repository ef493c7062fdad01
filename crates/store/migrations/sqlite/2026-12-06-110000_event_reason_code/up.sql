-- Events carry a reason code beside their kind: "is this the same event again" compares kind
-- and code, not the detail text (which carries changing counters). Rows written before codes
-- were kept take the code their kind names where one does (most kinds have a code of the same
-- name), and the application reads any other name as `unspecified`.
ALTER TABLE events ADD COLUMN code TEXT NOT NULL DEFAULT 'unspecified';
UPDATE events SET code = kind;
UPDATE events SET code = 'created_by_operator' WHERE kind = 'created';
UPDATE events SET code = 'updated_by_operator' WHERE kind = 'updated';
UPDATE events SET code = 'drain_requested' WHERE kind = 'drain';
UPDATE events SET code = 'recovery_failing' WHERE kind = 'recovery_failed';
UPDATE events SET code = 'session_held' WHERE kind = 'foreign_session';
