DROP INDEX instances_by_provider_id;
