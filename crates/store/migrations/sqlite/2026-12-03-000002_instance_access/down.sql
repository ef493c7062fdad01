DROP TABLE instance_access;
