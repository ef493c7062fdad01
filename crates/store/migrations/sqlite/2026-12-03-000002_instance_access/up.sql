-- What a booting instance may fetch and report through the server's instance-facing endpoints
-- (GARM's metadata and callback URLs): its token (SHA-256 only) with its expiry, its sealed JIT
-- config, and what it reported. One row per instance, removed with it.
CREATE TABLE instance_access (
    instance_name TEXT PRIMARY KEY NOT NULL REFERENCES instances (name) ON DELETE CASCADE,
    token_hash BLOB NOT NULL UNIQUE,
    expires_at BIGINT NOT NULL,
    jit_key_id TEXT NOT NULL,
    jit_ciphertext BLOB NOT NULL,
    bootstrap_status TEXT NOT NULL,
    status_message TEXT,
    agent_id BIGINT,
    os_name TEXT,
    os_version TEXT,
    updated_at BIGINT NOT NULL
);
