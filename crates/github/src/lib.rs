//! A protocol-faithful client for GitHub's runner scale-set service.
//!
//! It speaks the three HTTP surfaces described in `actions-protocol.md`:
//! the GitHub REST API (App JWT → installation token → registration token →
//! `runner-registration`), the Actions service "admin" API (runner groups, scale sets,
//! sessions, JIT configs, runners, jobs) and the message queue (long-poll, ack).
//!
//! **What it does:** config-URL parsing ([`ConfigUrl`], hosted vs GHES), the whole token chain
//! with an admin-token cache shared by all clones and refreshed single-flight from the token's
//! `exp`, every endpoint of protocol §5 with tolerant decoding, retries with backoff and
//! `Retry-After` (and REST rate-limit answers on the token chain waited out), refresh-once-on-401
//! for queue calls, a session create that never loses the session it opened, typed errors with
//! predicates ([`Error::is_scale_set_exists`], [`Error::session_conflict_owner`], …, falling back
//! on the status when a 409 body names no exception) and a policy classification
//! ([`Error::class`]), and typed answers where a refusal is an answer ([`Client::get_runner`]
//! gives `None` for a runner not registered, [`Client::remove_runner`] a [`Removal`]); trust roots ([`TrustRoots`]), HTTP proxies ([`ProxyConfig`]) and HTTP/2
//! ([`Http2Config`]: negotiated through ALPN, calls multiplexed over a few connections per host).
//!
//! **What it deliberately does not do:** decide anything. It never adopts, creates-if-missing,
//! retries a session conflict or scales; those are policies of `scaleset-adopt` and
//! `scaleset-control`. It installs no tracing subscriber and no global rustls provider, and it
//! reads no environment variable itself (pass an [`Environment`] to
//! [`ClientConfig::with_force_ghes_from_env`]).
//!
//! **Main types:** [`ClientConfig`] → [`Client`] (cheap to clone, `Send + Sync`, one connection
//! pool); [`Session`], [`Message`], [`JobMessage`]; [`RunnerScaleSet`]; [`Error`].
//!
//! # Example: a client for a PAT against a local server
//!
//! A config URL on any host other than github.com/`*.ghe.com` is GHES-style, so
//! `http://127.0.0.1:PORT/<org>` uses the REST base `http://127.0.0.1:PORT/api/v3`.
//! [`ClientConfig::with_api_base`] overrides the base explicitly.
//!
//! ```
//! use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials, RetryPolicy, Scope};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), scaleset_github::Error> {
//! let url = ConfigUrl::parse("http://127.0.0.1:8080/my-org")?;
//! assert_eq!(url.scope(), &Scope::Organization { org: "my-org".into() });
//! let config = ClientConfig::new(url, Credentials::pat("ghp_example"))
//!     .with_retry(RetryPolicy::new(5, Duration::from_millis(10), Duration::from_millis(100)));
//! assert_eq!(config.api_base().as_str(), "http://127.0.0.1:8080/api/v3");
//! let client = Client::new(config)?;
//! assert_eq!(client.api_base().as_str(), "http://127.0.0.1:8080/api/v3");
//! # Ok(())
//! # }
//! ```
//!
//! # Example: the session and long-poll loop
//!
//! Not run as a doctest because it needs a GitHub to talk to; `crates/sim`'s conformance tests
//! and `tests/e2e` run this loop against the simulator.
//!
//! ```no_run
//! use scaleset_github::{
//!     Client, JobMessage, MessageId, NewRunnerScaleSet, Result, RunnerGroupId, RunnerRequestId,
//! };
//!
//! async fn listen(client: &Client) -> Result<()> {
//!     // Look before you write (DESIGN §4): a create always follows a lookup, and a create
//!     // that lost a race to the same name is answered by looking again, never by a second
//!     // create. Whether an existing set may be used is `scaleset-adopt`'s decision; this
//!     // sketch takes it as is.
//!     let group = RunnerGroupId(1);
//!     let scale_set = match client.get_scale_set_by_name(group, "my-set").await? {
//!         Some(existing) => existing,
//!         None => match client.create_scale_set(&NewRunnerScaleSet::new("my-set", group)).await {
//!             Ok(created) => created,
//!             Err(error) if error.is_scale_set_exists() => client
//!                 .get_scale_set_by_name(group, "my-set")
//!                 .await?
//!                 .ok_or(error)?,
//!             Err(error) => return Err(error),
//!         },
//!     };
//!     let mut session = client.create_session(scale_set.id, "scaleset-owner").await?;
//!     let mut last_message_id = MessageId(0);
//!     loop {
//!         // Holds for about 50 s; `None` means nothing happened (reconcile from statistics).
//!         let Some(message) = client.get_message(&mut session, last_message_id, 10).await? else {
//!             continue;
//!         };
//!         last_message_id = message.message_id;
//!         client.delete_message(&mut session, message.message_id).await?;
//!         let available: Vec<RunnerRequestId> = message
//!             .jobs
//!             .iter()
//!             .filter_map(|job| match job {
//!                 JobMessage::Available { job, .. } => Some(job.runner_request_id),
//!                 _ => None,
//!             })
//!             .collect();
//!         if !available.is_empty() {
//!             client.acquire_jobs(&mut session, &available).await?;
//!         }
//!         let wanted = message.statistics.map(|s| s.total_assigned_jobs).unwrap_or(0);
//!         let _ = wanted; // scale to min(max, min_idle + wanted) with generate_jit_config
//!         # break;
//!     }
//!     client.delete_session(scale_set.id, &session.session_id).await
//! }
//! ```

mod ca_bundle;
mod call;
mod client;
mod config;
mod endpoint;
mod error;
mod exception;
mod h2pool;
mod http;
mod id;
mod job;
mod jwt;
mod lenient;
mod message;
mod observer;
mod pat;
mod retry;
mod runner;
mod runner_download;
mod scale_set;
mod session;
mod statistics;
mod timestamp;
mod token;
mod wire;

pub use crate::ca_bundle::ca_bundle_roots;
pub use crate::client::Client;
pub use crate::config::{
    ClientConfig, ConfigUrl, Credentials, Environment, FORCE_GHES_VAR, GitHubApp, Http2Config,
    ProcessEnvironment, ProxyConfig, Scope, Timeouts, TrustRoots,
};
pub use crate::endpoint::Endpoint;
pub use crate::error::{Error, ErrorBody, ErrorClass, Refusal, Result, ServiceError, SessionGone};
pub use crate::exception::{Exception, ExceptionKind, short_type_name};
pub use crate::id::{
    GithubScaleSetId, IdOutOfRange, MessageId, RunnerGroupId, RunnerId, RunnerRequestId,
};
pub use crate::job::AcquirableJob;
pub use crate::jwt::{app_key_fingerprint, unverified_expiry};
pub use crate::message::{JOB_MESSAGES_TYPE, JobInfo, JobMessage, Message};
pub use crate::observer::{CallObserver, CallReport};
pub use crate::pat::{UnsendableToken, check_pat};
pub use crate::retry::{
    RandomSource, RetryPolicy, Sleeper, TokioSleeper, is_retryable_status, jittered,
    parse_retry_after,
};
pub use crate::runner::{JitConfig, JitConfigRequest, Removal, RunnerReference};
pub use crate::runner_download::RunnerDownload;
pub use crate::scale_set::{
    Label, NewRunnerScaleSet, RunnerGroup, RunnerScaleSet, RunnerScaleSetPatch, RunnerSetting,
};
pub use crate::session::Session;
pub use crate::statistics::Statistics;
pub use crate::timestamp::Timestamp;
pub use crate::wire::List;
/// Secrets (PATs, keys, tokens, JIT configs): `secrecy`'s, so every scaleset crate holds the same
/// type; `Debug` redacts, there is no `Display` or `Serialize`, and the value is wiped on drop.
pub use secrecy::{ExposeSecret, SecretString};
