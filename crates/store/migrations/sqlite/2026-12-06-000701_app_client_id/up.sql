-- Issue 47 item 8: a GitHub App may be named by its client id (`Iv23li…`, the JWT issuer GitHub
-- now shows first) instead of its numeric App ID. An App row holds exactly one of `app_id` or
-- `client_id` (the store refuses a row with both or neither as corrupt); rows written before
-- this migration hold `app_id` and a NULL `client_id`, and keep loading as they did.
ALTER TABLE credentials ADD COLUMN client_id TEXT;
