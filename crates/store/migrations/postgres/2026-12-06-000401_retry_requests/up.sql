-- An operator's "retry now" (`scalesetctl scale-set retry`, `POST /scale-sets/{id}/retry`):
-- when it was last asked. The API runs in the server process and the back-off it cuts short
-- lives in the memory of whichever worker holds the lease, so the request travels through the
-- store: the worker's supervisor sees the time move at its next watch and wakes the set.
-- In scale_set_health, as what needs attention beyond the state (scale_sets has enough columns).
ALTER TABLE scale_set_health ADD COLUMN retry_requested_at BIGINT;
