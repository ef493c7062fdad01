//! `/api/v1/workers`: the worker processes sharing this database, and draining one before an
//! upgrade or a scale-down (issue 33 item 4).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The answer to `POST /api/v1/workers/{name}/drain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DrainWorkerResult {
    /// The worker's name (its `worker.name`, the holder of its leases).
    pub name: String,
    /// How many scale sets' leases it still holds: it releases each at its next watch
    /// interval, and the other workers take them.
    pub leases: u64,
    /// It holds no lease any more: stopping it now interrupts no scale set.
    pub drained: bool,
}
