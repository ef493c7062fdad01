//! The store suite, written once and run per backend: every test below runs on SQLite
//! always and on PostgreSQL when `SCALESET_TEST_DATABASE_URL` is set (each test in its own
//! database). `sqlite_file` holds the checks that only make sense for a database file.

mod helpers;

mod api_token;
mod concurrency;
mod controller;
mod corrupt_row;
mod credentials;
mod entity;
mod event;
mod instance;
mod instance_access;
mod instance_job;
mod lease;
mod modify;
mod open;
mod runner_downloads;
mod scale_set;
mod skip;
mod sqlite_file;
mod worker;
