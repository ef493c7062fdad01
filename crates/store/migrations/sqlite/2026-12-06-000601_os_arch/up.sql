-- The runners' operating system and CPU architecture, as GARM spells its `os_type` and `arch`
-- (issue 45): every scale set written before runs linux/amd64, which is what was sent.
ALTER TABLE scale_sets ADD COLUMN os_type TEXT NOT NULL DEFAULT 'linux';
ALTER TABLE scale_sets ADD COLUMN os_arch TEXT NOT NULL DEFAULT 'amd64';
