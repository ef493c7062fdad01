//! Conformance of the simulator: every endpoint and fault driven through the real
//! `scaleset-github` client over loopback HTTP, plus raw-HTTP checks of wire details and the
//! control API.

mod apps;
mod control;
mod endpoints;
mod faults;
mod helpers;
mod http2;
mod malformed;
mod queue;
mod rest;
mod saved;
