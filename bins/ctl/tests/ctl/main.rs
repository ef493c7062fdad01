//! `scalesetctl` run as a real binary: against a real API router with a real SQLite store on
//! `127.0.0.1:0` (and the simulator in-process where a scale set needs GitHub), asserting its
//! table and JSON output and its exit codes; and the errors a person meets before any server
//! answers (usage, configuration, an unreachable server).

mod decommission;
mod events;
mod fleet;
mod garm;
mod helpers;
mod messages;
mod offline;
mod online;
