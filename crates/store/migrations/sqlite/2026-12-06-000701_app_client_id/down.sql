ALTER TABLE credentials DROP COLUMN client_id;
