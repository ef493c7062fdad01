//! The decisions of one served scale set, with no I/O, no clock and no randomness of their
//! own (quinn-proto style): `scaleset-control`'s executors feed them facts and carry out what
//! they decide. In a crate of their own so that they can be read, tested and mutated alone:
//! a mutant here rebuilds this crate's tests only, not the whole control loop (issue 48: the
//! mutation run of every planner, `.ci/mutants-full`).
//!
//! The scale planner (this module): pure arithmetic from statistics and the runners we know to
//! runners to create and idle runners to retire; the scaler executes the plan and feeds the
//! world back in on the next call. The teardown core is [`teardown`], and the pool-key rule
//! [`pool_keys`].
//! The lease planner (which scale sets this worker serves among several) is [`leases`]; the
//! fleet, deletion and decommission planners are `scaleset-fleet`'s; the session planner (who holds a refused session, what the operator is told, when
//! to look again) is `session`. What becomes of the instances of a scale set GitHub deleted
//! (and we ensured anew) is [`superseded`]; what becomes of the instances of such a set once
//! a lost database took their rows too is [`orphans`]. When a failing provider is tried again, and when its scale set needs
//! attention, is [`provider_backoff`]'s; when a scale set whose runners keep failing to boot
//! creates the next one, [`bootstrap_backoff`]'s. Every other decision to remove a runner, delete
//! an instance or forget a row (reconciliation, crash recovery, bootstrap deadlines) is the
//! reconcile planner's, [`reconcile`]. How the
//! facts of a recovery that ran beside a listening scale set are merged when they land is
//! [`start`]'s. Whether an empty poll may stand on the last instance list, or must list the
//! rows again, is [`idle`]'s. Whether a provider's answer to a create is recorded as our instance, and by
//! which id an instance is deleted, is [`claim`]'s.

use std::time::Duration;

pub mod bootstrap_backoff;
pub mod claim;
pub mod exports;
pub mod idle;
pub mod leases;
pub mod orphans;
pub mod pool_keys;
pub mod provider_backoff;
pub mod reconcile;
pub mod session;
pub mod start;
pub mod superseded;
pub mod takeover;
pub mod teardown;

/// Where one of our runners is, as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunnerPhase {
    /// Being made: intent recorded, JIT config asked for, or the provider creating it.
    Pending,
    /// Created and not running a job (booting or idle): may be retired.
    Idle,
    /// Running a job: never retired by the planner.
    Busy,
    /// Being removed; counts for nothing.
    Leaving,
    /// Idle, and an operator asked for it to go (`DELETE /api/v1/instances/{name}`): retired
    /// at once and counts for nothing, so a replacement is made if one is needed.
    Unwanted,
}

/// One runner the planner knows about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerView {
    /// The runner name.
    pub name: String,
    /// Its phase.
    pub phase: RunnerPhase,
    /// How long it has been idle (zero unless [`RunnerPhase::Idle`]): surplus runners idle for
    /// less than [`PlanInput::scale_down_delay`] stay (the warm pool after a burst).
    pub idle_for: Duration,
}

/// What the planner decides from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanInput<'a> {
    /// Idle runners kept warm.
    pub min_idle: u32,
    /// The most runners at once.
    pub max_runners: u32,
    /// `totalAssignedJobs` from the latest statistics (negative counts as 0).
    pub assigned_jobs: i64,
    /// How long a surplus idle runner stays before it is retired (zero: at once).
    pub scale_down_delay: Duration,
    /// Every runner we know for the scale set.
    pub runners: &'a [RunnerView],
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// `min(max_runners, min_idle + totalAssignedJobs)`.
    pub desired: u32,
    /// How many runners to create.
    pub create: u32,
    /// Idle runners to retire, by name.
    pub retire: Vec<String>,
}

/// Plans one step: desired = `min(max_runners, min_idle + totalAssignedJobs)`; runners that
/// are pending, idle or busy count towards it. Short of it: create the difference. Above it:
/// retire idle surplus (the newest names last in sort order go first), never a busy or pending
/// runner, nor one idle for less than `scale_down_delay` (it stays warm for the next burst and
/// is retired once the delay has passed, if still surplus). Unwanted runners are always
/// retired (first, by name) and count for nothing.
pub fn plan(input: &PlanInput<'_>) -> Plan {
    let assigned = u32::try_from(input.assigned_jobs.max(0)).unwrap_or(u32::MAX);
    let desired = input
        .min_idle
        .saturating_add(assigned)
        .min(input.max_runners);
    let count = |phase| {
        u32::try_from(input.runners.iter().filter(|r| r.phase == phase).count()).unwrap_or(u32::MAX)
    };
    let live = count(RunnerPhase::Pending)
        .saturating_add(count(RunnerPhase::Idle))
        .saturating_add(count(RunnerPhase::Busy));
    // One of the two is zero: short of desired creates, above it retires. No branch on
    // `live < desired`, whose `<=` twin would plan the same (nothing) at exactly desired.
    let create = desired.saturating_sub(live);
    let surplus = usize::try_from(live.saturating_sub(desired)).unwrap_or(usize::MAX);
    let mut idle: Vec<&str> = input
        .runners
        .iter()
        .filter(|r| r.phase == RunnerPhase::Idle && r.idle_for >= input.scale_down_delay)
        .map(|r| r.name.as_str())
        .collect();
    idle.sort_unstable();
    let mut unwanted: Vec<&str> = input
        .runners
        .iter()
        .filter(|r| r.phase == RunnerPhase::Unwanted)
        .map(|r| r.name.as_str())
        .collect();
    unwanted.sort_unstable();
    let retire = unwanted
        .into_iter()
        .chain(idle.iter().rev().take(surplus).copied())
        .map(str::to_owned)
        .collect();
    Plan {
        desired,
        create,
        retire,
    }
}

#[cfg(test)]
mod tests;
