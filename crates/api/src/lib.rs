//! The REST API of scaleset, under `/api/v1`.
//!
//! Two halves:
//! - [`v1`]: the request and response bodies, always compiled (serde and utoipa only), for
//!   clients such as `scalesetctl` (depend with `default-features = false`).
//! - With the `server` feature (default): the axum [`router`] composed from one module per
//!   resource (controller, credentials, entities, scale sets, instances) plus health,
//!   readiness, metrics and the OpenAPI document; bearer-token auth on every `/api/v1` route
//!   ([`Caller`]); a body-size limit; one error enum, [`ApiError`], mapped to its status in one
//!   function ([`status`]) and rendered as `{code, message, request_id}`; and [`serve`], which
//!   takes an already-bound listener, optional TLS and a shutdown future.
//!
//! What it deliberately does not do: decide ownership or scaling, or call GitHub on a create.
//! A scale-set create stores the record and answers at once (the worker's task ensures it);
//! a drain disables it (the worker drains it); and the delete carries out the control crate's
//! decision from the stored provenance ([`scaleset_fleet::plan_deletion`]: created: deleted
//! on GitHub; adopted or known: detached unless `force`). It opens no database and reads no files: the
//! binary builds the [`AppState`].
//!
//! ```no_run
//! # async fn example(state: scaleset_api::AppState) -> std::io::Result<()> {
//! use std::sync::Arc;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let app = scaleset_api::router(Arc::new(state));
//! scaleset_api::serve(listener, app, None, async { let _ = tokio::signal::ctrl_c().await; }).await;
//! # Ok(())
//! # }
//! ```

pub mod v1;

/// This build for `--version`: the version, the commit (`SCALESET_REVISION` at build time,
/// `unknown` without it) and the compiler, as `scaleset_build_info` labels them.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (revision ",
    env!("SCALESET_BUILD_REVISION"),
    ", rustc ",
    env!("SCALESET_BUILD_RUSTC"),
    ")"
);

#[cfg(feature = "server")]
mod app;
#[cfg(feature = "server")]
mod auth;
#[cfg(feature = "server")]
mod bootstrap_files;
#[cfg(feature = "server")]
mod error;
#[cfg(feature = "server")]
mod extract;
#[cfg(feature = "server")]
pub mod openapi;
#[cfg(feature = "server")]
mod ours_undeclared;
#[cfg(feature = "server")]
mod page;
#[cfg(feature = "server")]
mod process_metrics;
#[cfg(feature = "server")]
mod request_id;
#[cfg(feature = "server")]
mod routes;
#[cfg(feature = "server")]
mod serve;
#[cfg(feature = "server")]
mod state;
#[cfg(feature = "server")]
pub mod status_page;
#[cfg(feature = "server")]
mod validate;
#[cfg(feature = "server")]
mod view;

#[cfg(feature = "server")]
pub use app::{probes_router, router, router_with};
#[cfg(feature = "server")]
pub use auth::Caller;
#[cfg(feature = "server")]
pub use error::{ApiError, class_code, control_code, status};
#[cfg(feature = "server")]
pub use extract::{Body, Params, parse_id};
#[cfg(feature = "server")]
pub use request_id::{REQUEST_ID_HEADER, RequestId};
#[cfg(feature = "server")]
pub use serve::{ConnectionLimits, TlsError, serve, serve_with, tls_config};
#[cfg(feature = "server")]
pub use state::{AppState, Limits};
