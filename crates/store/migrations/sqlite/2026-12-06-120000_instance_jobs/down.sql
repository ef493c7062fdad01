DROP TABLE instance_jobs;
