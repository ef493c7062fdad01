-- What an API token may do: `read` (GET routes and the status page), `operate` (also the
-- scale-set actions: drain, enable, retry, edit, delete) or `admin` (everything). Tokens made
-- before scopes existed had every right, and keep it.
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'admin';
