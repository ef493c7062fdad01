-- The job a busy runner runs, as GitHub's JobStarted named it, for the status page: its
-- repository (`owner/repo`) and workflow ref, each absent when GitHub left it out. Display
-- only: one row per instance, written again by a later start, removed with the instance.
CREATE TABLE instance_jobs (
    instance_name TEXT PRIMARY KEY NOT NULL REFERENCES instances (name) ON DELETE CASCADE,
    repository TEXT,
    workflow TEXT,
    started_at BIGINT NOT NULL
);
