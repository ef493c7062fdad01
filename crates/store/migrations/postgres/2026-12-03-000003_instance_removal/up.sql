-- An operator's request that an instance go (DELETE /api/v1/instances/{name}): the API
-- holds no lease, so it only records the wish; the worker serving the scale set retires it.
ALTER TABLE instances ADD COLUMN removal_requested_at BIGINT;
