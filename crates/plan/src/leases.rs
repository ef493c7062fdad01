//! The lease planner: which scale sets this worker should serve, given the live workers, the
//! enabled scale sets and who holds an unexpired lease on each. Pure (no I/O, no clock): the
//! supervisor reads the store, calls [`plan_leases`] every watch interval and runs one task per
//! scale set in [`LeasePlan::serve`]; a task it stops releases its lease cleanly.
//!
//! The rule: each worker's fair share is `ceil(scale sets / live workers)`. A worker keeps the
//! leases it holds up to its share and releases the rest; under its share it takes free ones
//! (no unexpired lease) up to it. A lease another worker holds is never planned (it is taken
//! only once it expires). Each worker walks the scale sets in id order rotated by its place among
//! the live workers (`place × M / N`), so workers starting together reach for different scale
//! sets, and a worker that sheds keeps the ones nearest its own start: the ones it releases are
//! the ones a newcomer reaches for first.
//!
//! A worker an operator drains (issue 33 item 4) is not counted: its share is 0, so it releases
//! every lease it holds and takes none, and the others' shares grow to take its scale sets.
//!
//! Why it converges: nobody plans above its share, and while a scale set is free some worker is
//! under its share (the shares add up to at least the number of scale sets), so it is taken at
//! the next plan; two workers reaching for the same free set are decided by the store (one
//! lease wins) and the loser reaches further at its next plan.

use std::collections::{BTreeMap, BTreeSet};

/// What the lease planner decides from, as of one read of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInput<'a, K> {
    /// This worker's name (the holder of its leases). It counts as live even when its own
    /// heartbeat is not in `live_workers` yet.
    pub worker: &'a str,
    /// The workers whose heartbeat has not expired.
    pub live_workers: &'a [String],
    /// The live workers an operator is draining (`scalesetctl worker drain NAME`, issue 33 item
    /// 4): they serve nothing, and the others share the scale sets without counting them.
    pub draining: &'a [String],
    /// The scale sets to serve (the enabled ones).
    pub scale_sets: &'a [K],
    /// Every unexpired lease: the scale set and its holder. A scale set missing here is free.
    pub held: &'a [(K, String)],
}

/// What this worker should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeasePlan<K> {
    /// The fair share: `ceil(scale sets / live workers)`.
    pub share: usize,
    /// The scale sets to serve: those it holds and keeps, then free ones to take.
    pub serve: Vec<K>,
    /// Scale sets it holds beyond its share: stop serving them and release their leases.
    pub release: Vec<K>,
}

/// Plans this worker's leases (see the module documentation for the rule).
pub fn plan_leases<K: Ord + Clone>(input: &LeaseInput<'_, K>) -> LeasePlan<K> {
    let draining = |worker: &str| input.draining.iter().any(|d| d == worker);
    if draining(input.worker) {
        // A draining worker hands every lease it holds to the others and takes none. The
        // served sets as a set: a scan of them for each lease was quadratic (10,000 × 10,000
        // comparisons every watch interval for a drained worker at 10,000 scale sets).
        let served: BTreeSet<&K> = input.scale_sets.iter().collect();
        let mut release: Vec<K> = input
            .held
            .iter()
            .filter(|(id, holder)| holder == input.worker && served.contains(id))
            .map(|(id, _)| id.clone())
            .collect();
        release.sort_unstable();
        release.dedup();
        return LeasePlan {
            share: 0,
            serve: Vec::new(),
            release,
        };
    }
    let mut workers: Vec<&str> = input
        .live_workers
        .iter()
        .map(String::as_str)
        .filter(|w| !draining(w))
        .chain(std::iter::once(input.worker))
        .collect();
    workers.sort_unstable();
    workers.dedup();
    let mut order: Vec<&K> = input.scale_sets.iter().collect();
    order.sort_unstable();
    order.dedup();
    let share = order.len().div_ceil(workers.len());
    // `place < workers`, so the offset is below the number of scale sets (or 0 without any).
    let place = workers
        .iter()
        .position(|w| *w == input.worker)
        .unwrap_or_default();
    let offset = place * order.len() / workers.len();
    order.rotate_left(offset);

    // Looked up once per scale set and pass: a map, not a scan of every lease (a scan made a
    // plan quadratic, 100 million comparisons every watch interval at 10,000 scale sets). The
    // first lease listed for a scale set counts, as a scan would find it.
    let mut holders: BTreeMap<&K, &str> = BTreeMap::new();
    for (id, holder) in input.held {
        holders.entry(id).or_insert(holder.as_str());
    }
    let holder = |id: &K| holders.get(id).copied();
    let mut serve = Vec::new();
    let mut release = Vec::new();
    for id in order.iter().filter(|id| holder(id) == Some(input.worker)) {
        if serve.len() < share {
            serve.push((*id).clone());
        } else {
            release.push((*id).clone());
        }
    }
    let room = share - serve.len();
    serve.extend(
        order
            .iter()
            .filter(|id| holder(id).is_none())
            .take(room)
            .map(|id| (*id).clone()),
    );
    LeasePlan {
        share,
        serve,
        release,
    }
}

#[cfg(test)]
mod tests;
