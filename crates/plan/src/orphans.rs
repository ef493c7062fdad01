//! Orphaned pools (issue 36): instances under a pool key of ours whose GitHub scale set is gone
//! and that nothing in the store names any more. The superseded-instance cleanup
//! ([`super::superseded`]) starts from the store's rows; once a database loss took the rows of
//! a scale set GitHub had deleted, only the providers still know those instances, by their
//! pool key. The sweep (`scaleset_control`'s `orphans`) finds them there and this planner decides, from
//! facts only (no I/O, no clock):
//!
//! - **ours**: the pool key is exactly one of this controller's
//!   ([`crate::pool_keys::our_pool`], the rule decommission uses);
//! - **not the store's**: no stored scale set has the key's GitHub id and no instance row names
//!   the key (rows are their scale set's to clean: reconciliation and the superseded cleanup);
//! - **gone**: every entity the store knows answered the get-by-id with "not found" or with a
//!   scale set carrying another controller's owner label (never one we serve: adoption refuses
//!   it). Ids may collide across entities (they may be served by different Actions service
//!   instances), so one entity's 404 proves nothing: each one is asked. No entity known, a
//!   lookup that failed, or a scale set found without another owner's label: unproven, left;
//! - **safe**: an instance whose runner is registered and busy on any entity is left to end
//!   its job; an idle registered one is removed first; then the instance is deleted
//!   ([`super::superseded::retirement`], the superseded cleanup's own rule);
//! - **rate**: a sweep is due once after start when every stored scale set that is enabled has
//!   its GitHub id (the ensures landed), else one reconcile interval after start, and then every
//!   reconcile interval; never while a decommission in this process holds scale sets.
//!
//! Residual risk: a scale set of ours on an entity the store no longer knows (dropped from the
//! declared fleet and the database lost) cannot be asked; its id reads as gone when no known
//! entity has it, and its runners are looked up only on the known entities. Decommission an
//! entity before dropping it from the fleet (docs/operations.md, "Orphaned instances").

use std::collections::BTreeSet;
use std::time::Duration;

use scaleset_adopt::Identity;
use uuid::Uuid;

use super::superseded::OldRunner;
use crate::pool_keys::our_pool;

/// The pools worth looking at, as `(pool key, GitHub id)`: ours by the key, and named by
/// nothing the store holds (`stored_ids`: the stored scale sets' GitHub ids; `row_keys`: the
/// pool keys instance rows name). Each key once, in order.
pub fn candidates(
    controller: Uuid,
    listed: &[String],
    stored_ids: &BTreeSet<i64>,
    row_keys: &BTreeSet<String>,
) -> Vec<(String, i64)> {
    let keys: BTreeSet<&String> = listed.iter().collect();
    keys.into_iter()
        .filter(|key| !row_keys.contains(*key))
        .filter_map(|key| {
            let id = our_pool(key, controller)?;
            (!stored_ids.contains(&id)).then(|| (key.clone(), id))
        })
        .collect()
}

/// What one entity's GitHub answered to the get-by-id of a pool key's scale-set id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// No scale set with that id (`RunnerScaleSetNotFoundException`).
    NotFound,
    /// A scale set with that id, with its label names.
    Found(Vec<String>),
    /// The lookup failed (after the client's retries).
    Failed,
}

/// Why a pool is left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unproven {
    /// The store knows no entity to ask.
    NoEntity,
    /// An entity could not be asked.
    LookupFailed,
    /// An entity has a scale set with that id, not provably another controller's.
    Exists,
}

/// Whether the scale set of a pool key is gone, from every known entity's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// Gone on every known entity: its instances are orphans.
    Gone,
    /// Not proven gone: nothing is touched.
    Unproven(Unproven),
}

/// Judges a pool key's scale-set id from the answers of every entity the store knows.
pub fn proof(identity: &Identity, answers: &[Answer]) -> Proof {
    if answers.is_empty() {
        return Proof::Unproven(Unproven::NoEntity);
    }
    let mut failed = false;
    for answer in answers {
        match answer {
            Answer::NotFound => {}
            Answer::Found(labels) if labels.iter().any(|l| identity.is_foreign_owner_label(l)) => {}
            Answer::Found(_) => return Proof::Unproven(Unproven::Exists),
            Answer::Failed => failed = true,
        }
    }
    if failed {
        Proof::Unproven(Unproven::LookupFailed)
    } else {
        Proof::Gone
    }
}

/// A runner registered on one of the known entities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// Which entity (an index into the sweep's entities).
    pub entity: usize,
    /// GitHub's runner id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Whether it is running a job.
    pub busy: bool,
}

/// What GitHub says of an orphan instance's runner (named as the instance), across every
/// known entity: busy anywhere wins; then the idle registrations to remove, as
/// `(entity, runner id)`; none is gone.
pub fn old_runner(name: &str, runners: &[Registered]) -> (OldRunner, Vec<(usize, i64)>) {
    let named: Vec<&Registered> = runners.iter().filter(|r| r.name == name).collect();
    if named.iter().any(|r| r.busy) {
        return (OldRunner::Busy, Vec::new());
    }
    let idle: Vec<(usize, i64)> = named.iter().map(|r| (r.entity, r.id)).collect();
    if idle.is_empty() {
        (OldRunner::Gone, idle)
    } else {
        (OldRunner::Idle, idle)
    }
}

/// When the last sweep was, as the supervisor's tick sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepClock {
    /// Since this control loop started.
    pub since_start: Duration,
    /// Since the last sweep began (`None`: none yet).
    pub since_last: Option<Duration>,
    /// The reconcile interval.
    pub interval: Duration,
}

/// Whether a sweep starts at this tick (see the module documentation): `unensured` says
/// whether an enabled stored scale set still lacks its GitHub id, `running` whether the last
/// sweep is still going, `hands_off` whether a decommission in this process holds scale sets.
pub fn sweep_due(clock: SweepClock, unensured: bool, running: bool, hands_off: bool) -> bool {
    if running || hands_off {
        return false;
    }
    match clock.since_last {
        Some(since) => since >= clock.interval,
        None => !unensured || clock.since_start >= clock.interval,
    }
}

#[cfg(test)]
mod tests;
