-- The adoption machine's refusal, typed (JSON of scaleset_adopt::Refusal), kept while the
-- state is a refusal, so every read serves it, not only the create's answer.
ALTER TABLE scale_sets ADD COLUMN refusal TEXT;
