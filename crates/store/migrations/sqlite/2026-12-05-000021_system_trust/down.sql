ALTER TABLE credentials DROP COLUMN system_trust;
