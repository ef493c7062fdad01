//! Which metrics series a worker exports when several workers share one store (issue 50 item
//! 1). Pure (no I/O, no clock): the supervisor calls [`plan_exports`] with what it read for the
//! lease planner, every watch interval.
//!
//! Every worker reads the whole store, so if each exported what it read, a Prometheus scraping
//! three workers would `sum()` every fleet-wide and per-set gauge to three times the truth. The
//! rule, so that a sum over every scraped process is the truth:
//!
//! - **Fleet-wide series** (scale sets by state, needing attention, runners by status, not
//!   declared) are exported by one worker, the *leader*: the first live worker by name that is
//!   not draining (the first live one when all drain). This worker counts as live even before
//!   its first heartbeat is read back, as in the lease planner. A process without a control
//!   loop (the API-only `scaleset-server`) exports none.
//! - **A scale set's series** are exported by the worker holding its unexpired lease (the one
//!   serving it, where its counters and timings are recorded); a set nobody holds (disabled and
//!   empty, or between holders) by a worker about to serve it and by the leader.
//!
//! Leader change and worker loss: a worker that stops cleanly leaves the registry, and the next
//! leader exports from its next watch interval; a killed worker's series go stale in Prometheus
//! with its target, its leases expire after `lease_ttl`, and its sets are exported by their new
//! holders (or the leader) from then. Around a change a series may be exported twice or by
//! nobody for up to one `watch_interval` (each worker decides at its own tick).

use std::collections::{BTreeMap, BTreeSet};

/// What the export planner decides from: the lease planner's read of the store, and what this
/// worker is about to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInput<'a, K> {
    /// This worker's name.
    pub worker: &'a str,
    /// The workers whose heartbeat has not expired.
    pub live_workers: &'a [String],
    /// The live workers being drained.
    pub draining: &'a [String],
    /// Every scale set in the store.
    pub scale_sets: &'a [K],
    /// Every unexpired lease: the scale set and its holder.
    pub held: &'a [(K, String)],
    /// The scale sets this worker serves or is about to serve (its lease plan's, and its
    /// running tasks).
    pub serving: &'a BTreeSet<K>,
}

/// What this worker exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exports<K> {
    /// Whether it exports the fleet-wide series (it is the leader).
    pub fleet: bool,
    /// The scale sets whose series it exports.
    pub sets: BTreeSet<K>,
}

impl<K> Default for Exports<K> {
    /// Nothing: before the first read of the registry.
    fn default() -> Self {
        Self {
            fleet: false,
            sets: BTreeSet::new(),
        }
    }
}

/// Decides what this worker exports (see the module documentation for the rule).
pub fn plan_exports<K: Ord + Clone>(input: &ExportInput<'_, K>) -> Exports<K> {
    let draining = |worker: &str| input.draining.iter().any(|d| d == worker);
    let candidates: BTreeSet<&str> = input
        .live_workers
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(input.worker))
        .collect();
    let leader = candidates
        .iter()
        .find(|w| !draining(w))
        .or_else(|| candidates.first());
    let fleet = leader == Some(&input.worker);
    // The first lease listed for a scale set counts, as in the lease planner.
    let mut holders: BTreeMap<&K, &str> = BTreeMap::new();
    for (id, holder) in input.held {
        holders.entry(id).or_insert(holder.as_str());
    }
    let sets = input
        .scale_sets
        .iter()
        .filter(|id| match holders.get(id) {
            Some(holder) => *holder == input.worker,
            None => fleet || input.serving.contains(*id),
        })
        .cloned()
        .collect();
    Exports { fleet, sets }
}

#[cfg(test)]
mod tests;
