ALTER TABLE scale_sets DROP COLUMN os_arch;
ALTER TABLE scale_sets DROP COLUMN os_type;
