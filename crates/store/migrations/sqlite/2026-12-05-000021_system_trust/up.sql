-- Issue 31 item 4: credentials whose endpoint trusts the operating system's certificate store
-- (`trust_roots = "system"` in the configuration file) instead of the built-in web PKI roots.
ALTER TABLE credentials ADD COLUMN system_trust BOOLEAN NOT NULL DEFAULT 0;
