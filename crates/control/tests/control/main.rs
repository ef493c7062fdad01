//! Integration tests of the control loop: the real client against the simulator over
//! loopback, the fake provider, and the store on SQLite (always) and PostgreSQL (when
//! `SCALESET_TEST_DATABASE_URL` is set).

mod batching;
mod burst;
mod calls;
mod claims;
mod drain;
mod failing_boots;
mod faults;
mod fence;
mod fleet;
mod garm_provider;
mod helpers;
mod idle;
mod lifecycle;
mod orphans;
mod provider_faults;
mod recovery;
mod scaling;
mod sessions;
mod start;
mod superseded;
mod supervisor;
mod tools;
mod waits;
