-- What a scale set's machines are given besides the runner (issue 45): the runners' proxy, SSH
-- keys and user-data options of GARM's bootstrap, as one JSON object; '{}' (none of them) is
-- what every scale set written before sent.
ALTER TABLE scale_sets ADD COLUMN runner_setup TEXT NOT NULL DEFAULT '{}';
