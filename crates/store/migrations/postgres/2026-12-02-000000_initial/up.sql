-- Initial schema (PostgreSQL). Times are unix milliseconds (BIGINT); ids are UUID text.
-- Keep in step with ../../sqlite/2026-12-02-000000_initial/up.sql and docs/architecture.md.

CREATE TABLE controller (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    controller_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE credentials (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    app_id BIGINT,
    installation_id BIGINT,
    secret_key_id TEXT NOT NULL,
    secret_ciphertext BYTEA NOT NULL,
    base_url TEXT NOT NULL,
    api_base_url TEXT NOT NULL,
    ca_bundle TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE entities (
    id TEXT PRIMARY KEY NOT NULL,
    credentials_id TEXT NOT NULL REFERENCES credentials (id),
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (credentials_id, kind, path)
);

CREATE TABLE scale_sets (
    id TEXT PRIMARY KEY NOT NULL,
    entity_id TEXT NOT NULL REFERENCES entities (id),
    name TEXT NOT NULL,
    runner_group_name TEXT NOT NULL,
    runner_group_id BIGINT,
    labels TEXT NOT NULL,
    disable_update BOOLEAN NOT NULL,
    provider TEXT NOT NULL,
    image TEXT NOT NULL,
    flavor TEXT NOT NULL,
    min_idle BIGINT NOT NULL,
    max_runners BIGINT NOT NULL,
    bootstrap_timeout_secs BIGINT NOT NULL,
    runner_prefix TEXT NOT NULL,
    extra_specs TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    adoption_policy TEXT NOT NULL,
    repair BOOLEAN NOT NULL,
    github_id BIGINT,
    provenance TEXT,
    evidence TEXT NOT NULL,
    state TEXT NOT NULL,
    state_reason TEXT NOT NULL,
    last_message_id BIGINT NOT NULL,
    session_id TEXT,
    desired_runners BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (entity_id, runner_group_name, name)
);

CREATE TABLE instances (
    name TEXT PRIMARY KEY NOT NULL,
    scale_set_id TEXT NOT NULL REFERENCES scale_sets (id),
    provider_id TEXT,
    github_runner_id BIGINT,
    pool_key TEXT NOT NULL,
    status TEXT NOT NULL,
    bootstrap_deadline BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX instances_by_scale_set ON instances (scale_set_id);

CREATE TABLE leases (
    scale_set_id TEXT PRIMARY KEY NOT NULL REFERENCES scale_sets (id) ON DELETE CASCADE,
    holder TEXT NOT NULL,
    token BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    acquired_at BIGINT NOT NULL
);

CREATE TABLE events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scale_set_id TEXT NOT NULL REFERENCES scale_sets (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX events_by_scale_set ON events (scale_set_id, id);

CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE,
    token_hash BYTEA NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);
