//! The API's integration tests: the router served on `127.0.0.1:0` over a fresh store (SQLite
//! always, PostgreSQL with `SCALESET_TEST_DATABASE_URL`), driven over real HTTP, with the
//! simulator in-process for GitHub.

mod auth;
mod control_failures;
mod declared;
mod door_values;
mod doors;
mod events;
mod helpers;
mod input;
mod instance_facing;
mod openapi;
mod page_actions;
mod pages;
mod plan;
mod resources;
mod scale_sets;
mod scopes;
mod served_by;
mod status_page;
mod tokens;
mod workers;
