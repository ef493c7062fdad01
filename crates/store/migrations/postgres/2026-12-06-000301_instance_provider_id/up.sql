-- Before a provider's answer to a create is recorded, the worker looks for rows that already
-- claim its provider id (or are named so): an answer naming another row's instance is refused.
CREATE INDEX instances_by_provider_id ON instances (provider_id);
