ALTER TABLE api_tokens DROP COLUMN scope;
