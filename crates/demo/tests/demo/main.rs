//! The demo's promises, run in process against its real parts (the simulator on a loopback
//! port, SQLite and the fake cloud in a temporary data directory): the disaster rehearsal
//! (delete the database between two runs: everything is adopted back, nothing created,
//! runners re-recorded, jobs keep flowing), a second run resuming, and a foreign controller's
//! scale set refused with its reason, and a stop during a GitHub outage.

mod helpers;
mod outage;
mod rehearsal;
