-- Each entity's runner downloads (GARM's `tools`) as a worker last read them from GitHub, so
-- the API and scalesetctl, which do not share the worker's memory, can say which download a
-- new runner of a scale set would get. `downloads` is the JSON list of the last good read
-- (download tokens are not kept), NULL before one; `failure` is the last read's error while no
-- good read followed it.
CREATE TABLE runner_downloads (
    entity_id TEXT PRIMARY KEY NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    downloads TEXT,
    read_at BIGINT,
    failure TEXT,
    failed_at BIGINT
);
