DROP TABLE runner_downloads;
