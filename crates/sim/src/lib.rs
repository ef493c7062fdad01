//! `scaleset-sim`: a GitHub-faithful, fault-injecting simulator of GitHub's runner scale-set
//! service, for tests, the quick start, and rehearsing disasters.
//!
//! One HTTP listener serves:
//! - the GitHub REST surface under `/api/v3/` (as a GHES host would): installation tokens,
//!   registration tokens for repositories, organizations and enterprises,
//!   `actions/runner-registration` (also at the root path), the runner application downloads
//!   (with archives holding a simulated runner) and `rate_limit`, so that other runner tools run against it
//!   unchanged;
//! - the Actions service under a configurable base path (default `/tenant/1/`): runner groups,
//!   scale sets, sessions, acquirable jobs, acquire, JIT configurations and agents;
//! - the message queue on its own path (default `/scalesets/message`), with a real-time
//!   long-poll;
//! - a JSON control API under `/_sim/` (see `docs/simulator.md`), whose operations are also the
//!   methods of [`Simulator`].
//!
//! It behaves as `reference/actions-protocol.md` documents GitHub: exact status codes (200 on
//! scale-set create, 204 on deletes, 202 on an empty poll), camelCase output and
//! case-insensitive input keys, .NET wrapped exceptions, body-less 401s on the queue, router
//! 404s, at-least-once scale-set-scoped delivery, capacity gating by `X-ScaleSetMaxCapacity`,
//! both assignment modes, reassignment, dormancy. Simulated time ([`Simulator::advance`])
//! drives token expiry and every timer, so tests never sleep for them.
//!
//! **What it deliberately does not do.** It depends on no crate of this workspace: its wire
//! shapes are written from the protocol reference, so a mistake in the client's types cannot
//! hide behind a shared definition. It speaks HTTP/1.1 and HTTP/2: plain HTTP (h2c by prior
//! knowledge) or, with [`SimConfig::tls`], HTTPS with ALPN; it checks GitHub App JWTs as GitHub
//! does (RS256 signature against the key of an App registered in [`SimConfig::apps`], `iat`,
//! `exp` and `iss`), and runs no real runner: a simulated runner is a state transition.
//!
//! Main types: [`Simulator`] (build, serve, steer), [`RunningSim`] (one serving on a loopback
//! port until dropped: the harness of every test that needs a GitHub), [`SimConfig`] (seed and switches),
//! [`Faults`] (what to break), [`StateSnapshot`] (what is inside), [`JobSpec`] (what to
//! enqueue).
//!
//! ```
//! use scaleset_sim::{Faults, JobSpec, SimConfig, Simulator};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sim = Simulator::new(SimConfig::default())?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! let stop = CancellationToken::new();
//! let server = tokio::spawn({
//!     let (sim, stop) = (sim.clone(), stop.clone());
//!     async move { sim.serve(listener, stop.cancelled_owned()).await }
//! });
//!
//! // A client would now use http://{addr}/acme with PAT `ghp_simulator`.
//! let foreign = sim.create_foreign_scale_set("acme", 0, "linux", "other-controller")?;
//! sim.enqueue_jobs(foreign.scale_set_id, &JobSpec::count(2))?;
//! sim.update_faults(|f| f.bom = true);
//! assert_eq!(sim.state().jobs_of(foreign.scale_set_id).count(), 2);
//! assert!(addr.port() > 0);
//!
//! stop.cancel();
//! server.await??;
//! # Ok(())
//! # }
//! ```

mod actions;
mod app_auth;
mod auth;
mod clock;
mod config;
mod control;
mod error;
mod exception;
mod fault;
mod pats;
mod protocol;
mod queue;
mod quota;
mod request;
mod request_log;
mod rest;
mod route;
mod runner_download;
mod running;
mod scope;
mod server;
mod service;
mod simulator;
mod snapshot;
mod state;
mod tls;
mod token;

pub use app_auth::{AppPublicKey, KeyError};
pub use clock::SimTime;
pub use config::{AppSeed, AssignmentMode, InstallationSeed, PatSeed, RunnerGroupSeed, SimConfig};
pub use error::Error;
pub use fault::{
    Burst, Faults, NestedStyle, RaceCreate, RateLimit, RestRateLimit, RestRateLimitAnswer,
};
pub use pats::PatUse;
pub use running::RunningSim;
pub use simulator::{ForeignScaleSet, Simulator};
pub use snapshot::{
    AgentInfo, JobInfo, JobSpec, Listening, RequestRecord, RunnerGroupInfo, ScaleSetInfo,
    SessionInfo, StateSnapshot, Statistics,
};
pub use tls::TlsIdentity;
