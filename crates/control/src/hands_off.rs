//! [`HandsOff`]: the scale sets this process's control loop must let go of while a decommission
//! in the same process (the server's `POST /api/v1/decommission/apply` beside `--with-worker`)
//! takes them over. A worker in another process is asked by nothing: its lease refuses the
//! decommission, as it does `scaleset-worker decommission`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use scaleset_store::ScaleSetId;

/// A shared set of scale-set ids the [`crate::Controller`] neither serves nor drains: their
/// tasks are stopped (the session deleted, the lease released) at its next watch, and no lease
/// of theirs is taken until the id is removed. Cloning shares the set.
#[derive(Debug, Clone)]
pub struct HandsOff {
    worker: String,
    ids: Arc<Mutex<BTreeSet<ScaleSetId>>>,
}

impl HandsOff {
    /// The set of the control loop that runs as worker `worker` (its lease holder name).
    pub fn new(worker: impl Into<String>) -> Self {
        Self {
            worker: worker.into(),
            ids: Arc::default(),
        }
    }

    /// The lease holder name of the control loop that obeys this set.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Asks the control loop to let `id` go.
    pub fn insert(&self, id: ScaleSetId) {
        self.lock().insert(id);
    }

    /// Lets the control loop serve (or drain) `id` again.
    pub fn remove(&self, id: ScaleSetId) {
        self.lock().remove(&id);
    }

    /// Whether `id` is to be let go.
    pub fn contains(&self, id: ScaleSetId) -> bool {
        self.lock().contains(&id)
    }

    /// Whether no scale set is to be let go (no decommission in this process holds any).
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<ScaleSetId>> {
        // A panic while holding this lock cannot leave the set half-changed (one insert or
        // remove), so a poisoned lock is still a good set.
        self.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_set() {
        let a = HandsOff::new("w1");
        let b = a.clone();
        let id = ScaleSetId(uuid::Uuid::nil());
        assert!(a.is_empty());
        a.insert(id);
        assert!(b.contains(id));
        assert!(!b.is_empty());
        b.remove(id);
        assert!(!a.contains(id));
        assert!(a.is_empty());
        assert_eq!(a.worker(), "w1");
    }
}
