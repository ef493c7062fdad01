//! `scaleset-app`: the one composition root of scaleset's processes. `scaleset-worker`,
//! `scaleset-server` (with or without `--with-worker`) and the demo all start through
//! [`App::build`] (or [`App::build_api_only`] for an API server without the control loop), as
//! zero-to-production's `Application::build` does, so they cannot drift apart:
//!
//! 1. the one-worker lock of a SQLite file (with the control loop);
//! 2. the store, opened and migrated, and the controller binding it reports (an unpinned id is
//!    logged);
//! 3. the controller identity and the GitHub clients (proxy settings from [`Env`]);
//! 4. the declared fleet applied through `scaleset_fleet::apply_declared` (so a wiped
//!    database is rebuilt by a restart, the demo's disaster rehearsal included);
//! 5. the providers (the fake one as `[fake]` says, booted by [`Env::fake_boot`] or the
//!    simulator at `[fake] simulator_url`), and the `Controller` with its metrics;
//! 6. on [`App::start`], one HTTP state: [`Running::api_router`] (the API, the status page and
//!    the probes) or [`Running::probes_router`] (`/healthz`, `/readyz`, `/metrics` alone), the
//!    same handlers either way; `/readyz` has one meaning everywhere: **the store answers**
//!    (`scaleset_api::v1::Readiness`); and the watch on the secrets declared in files
//!    (`token_file`, `private_key_file`): one replaced is re-sealed in the store and used by
//!    the GitHub clients from their next token fetch, without a restart.
//!
//! The console (logging setup, output that survives a closed pipe) is here once too:
//! [`console`]. The binaries only parse arguments, load the configuration, bind their
//! listeners and wait for a signal.
//!
//! **What it deliberately does not do.** It reads no file but through the configuration, binds
//! no port (the binaries do, to name the key in their errors), and makes no decision: those
//! are `scaleset-control`'s.

mod app;
mod boot;
mod check;
pub mod console;
mod crash;
mod decommission;
mod env;
mod error;
pub mod exit;
mod lifecycle;
pub mod manual;
mod providers;
mod rotation;
mod runtime;
mod signals;

pub use app::{App, FleetApplied, Running, Stopped};
pub use check::{ToolCheck, check, check_runner_tools, load};
pub use decommission::{DecommissionSite, decommission};

/// The decommission's options, plan and digest, for the binaries that print and apply it
/// (they depend on this crate, not on `scaleset-control`).
pub mod decommission_types {
    pub use scaleset_fleet::{
        DecommissionAct, DecommissionItem, DecommissionOptions, DecommissionPlan,
        DecommissionReport, DecommissionScope, DecommissionSubject, DecommissionWhy, PlanDigest,
        parse_scope,
    };

    /// A decommission that failed, or was refused (`StaleDecommission`: the plan changed since
    /// it was reviewed).
    pub use scaleset_fleet::Error as DecommissionError;
}
pub use env::Env;
pub use error::{BuildError, LoopError};
pub use exit::Exit;
pub use lifecycle::{Role, ServeError, serve};
pub use runtime::{BLOCKING_HEADROOM, block_on, blocking_threads, runtime};
pub use signals::{Deferred, Signals};
