-- A worker an operator drains (`scalesetctl worker drain NAME`) hands its scale sets' leases to
-- the other workers and takes none until it registers anew (a restart removes and re-inserts it).
ALTER TABLE workers ADD COLUMN draining BOOLEAN NOT NULL DEFAULT FALSE;
