//! The worker registry: which worker processes share this database right now, each kept alive
//! by its own heartbeats, so that workers can count each other and spread the scale sets'
//! leases among themselves (DESIGN §5). A worker that stops heartbeating (killed, paused,
//! partitioned) drops out once its entry expires; a clean shutdown removes it at once.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;

/// The longest worker name (a host name's limit: workers are named after their host by
/// default).
pub const MAX_WORKER_NAME: usize = 253;

/// The one rule of a worker's name (`worker.name`, the holder of its leases), for every door
/// that takes one: 1 to [`MAX_WORKER_NAME`] characters, none of them a control character (a
/// name is printed in logs, the status page and `scalesetctl` tables). `None` when it is good,
/// else what is wrong and what to write.
pub fn worker_name_problem(name: &str) -> Option<String> {
    let count = name.chars().count();
    if name.trim().is_empty() {
        return Some("is empty; give every worker a unique name".to_owned());
    }
    if count > MAX_WORKER_NAME {
        return Some(format!(
            "has {count} characters; give a name of at most {MAX_WORKER_NAME}"
        ));
    }
    if let Some(bad) = name.chars().find(|c| c.is_control()) {
        return Some(format!(
            "{name:?} holds the control character U+{:04X}; give a name of printable \
             characters (the host name, by default)",
            u32::from(bad)
        ));
    }
    None
}

/// The registry of live workers.
#[async_trait]
pub trait WorkerStore: Send + Sync {
    /// Records that `name` is alive for `ttl` from now (inserted on its first heartbeat).
    async fn heartbeat_worker(&self, name: &str, ttl: Duration) -> Result<()>;

    /// The names of the workers whose last heartbeat has not expired, sorted.
    async fn live_workers(&self) -> Result<Vec<String>>;

    /// Marks the live worker `name` as draining (`scalesetctl worker drain NAME`): it hands its
    /// leases to the other workers and takes none. It stays draining until it leaves the
    /// registry ([`WorkerStore::remove_worker`], which a worker also does when it starts).
    /// Whether a live worker of that name was found.
    async fn drain_worker(&self, name: &str) -> Result<bool>;

    /// The names of the live workers that are draining, sorted.
    async fn draining_workers(&self) -> Result<Vec<String>>;

    /// Removes `name` from the registry (a clean shutdown); removing an unknown name is not an
    /// error.
    async fn remove_worker(&self, name: &str) -> Result<()>;
}
