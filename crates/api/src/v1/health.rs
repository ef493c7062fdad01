//! `GET /readyz`: the one readiness answer of every scaleset process (the server, the worker,
//! the demo).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Whether this process is ready: **the store answers** (within a bound), and, in a worker, no
/// lease it serves is in doubt. That is the one meaning of `/readyz` in every scaleset
/// process; when not ready, `reason` says why in a type. A worker standing by (holding no lease because other workers hold
/// every scale set) is ready: it is doing its job, waiting to take over, and a readiness that
/// waited for a lease would stall rolling updates and take an API server running the control
/// loop out of its load balancer. How much a worker serves is reported here for people
/// (`leasesHeld`) and in `/metrics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Readiness {
    /// Whether the store answers (the status is 200 when true, 503 when false).
    pub ready: bool,
    /// `ok`, or the store's error when it does not answer.
    pub store: String,
    /// The worker's name, when this process runs the control loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// The enabled scale sets in the store, when this process runs the control loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_sets: Option<u64>,
    /// How many of them this worker holds an unexpired lease on (0: starting, or standing by
    /// while other workers hold them all), when this process runs the control loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leases_held: Option<u64>,
    /// Why the process is not ready (absent when it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<NotReady>,
}

/// Why a process is not ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum NotReady {
    /// The store answered with an error (named in `store`).
    StoreFailed,
    /// The store did not answer within `after_ms` milliseconds: a database cut off by the
    /// network, or one too loaded to answer.
    StoreTimedOut {
        /// The bound it did not answer within.
        after_ms: u64,
    },
    /// This worker could not renew the leases of these scale sets (failed, or no answer
    /// within their TTL): it has fenced itself on them (creates no runner, acknowledges no
    /// message there) and another worker takes them over.
    LeasesInDoubt {
        /// The scale sets' names.
        scale_sets: Vec<String>,
    },
}

impl Readiness {
    /// A readiness answer.
    pub fn new(
        ready: bool,
        store: String,
        worker: Option<String>,
        scale_sets: Option<u64>,
        leases_held: Option<u64>,
    ) -> Self {
        Self {
            ready,
            store,
            worker,
            scale_sets,
            leases_held,
            reason: None,
        }
    }

    /// This answer, not ready for `reason`.
    #[must_use]
    pub fn not_ready(mut self, reason: NotReady) -> Self {
        self.ready = false;
        self.reason = Some(reason);
        self
    }
}
