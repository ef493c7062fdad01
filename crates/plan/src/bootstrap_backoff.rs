//! The bootstrap back-off planner: when a scale set whose runners keep failing to boot may
//! create the next one. Pure (no I/O, no clock: "now" and the random draw come in as values);
//! the scaler feeds it every bootstrap that failed (an instance that reported `failed` through
//! its callback, or one not online by its bootstrap deadline) and every runner that came
//! online (its callback reported `idle`, GitHub lists it online, or it took a job), asks
//! [`Boots::may_create`] before each create, and records on the scale set what [`Shown`] says.
//!
//! The provider's back-off ([`super::provider_backoff`]) cannot carry this: a create and a
//! delete that work reset it, and a failed bootstrap begins with a create that worked.
//!
//! The rules (each a unit or property test beside it):
//! - after a failed bootstrap no runner is created for the scale set before
//!   `base × 2^(r-1)` has passed (`r` the rounds of failures so far), capped at `max`, jittered
//!   between half of it and all of it;
//! - a failure that lands while the scale set already waits (the other runners of a burst
//!   made together, failing for the same reason) is counted, but does not start a new round:
//!   ten runners failing at once wait as one does, not ten doublings;
//! - only a runner of the scale set coming online ends the back-off and resets the count;
//!   nothing else (a create that worked, a poll, a new pass) does.

use std::time::Duration;

use scaleset_store::Timestamp;

/// The back-off settings (`Settings::bootstrap_backoff_base` and its sibling, `scaleset-settings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootPolicy {
    /// The wait after the first round of failures; doubles per round.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
}

/// One scale set's bootstraps, as its task last found them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Boots {
    /// Failed bootstraps since a runner of the scale set last came online.
    pub failures: u32,
    /// Rounds of failures: failures that each began a wait.
    pub rounds: u32,
    /// No runner is created before this.
    pub retry_at: Option<Timestamp>,
}

/// What the scale set is to show after a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Nothing to record.
    Unchanged,
    /// Creates wait: `failures` in a row so far, the next create not before `retry_in`.
    BackingOff {
        /// Failed bootstraps in a row.
        failures: u32,
        /// The wait from now before the next create.
        retry_in: Duration,
    },
    /// A runner came online after `failures` failed bootstraps: the back-off is over.
    Recovered {
        /// The failed bootstraps it ends.
        failures: u32,
    },
}

/// The wait after `rounds` rounds of failures, jittered by `random` (a draw in `[0, 1)`):
/// `base × 2^(rounds-1)` capped at `max`, between half of it and all of it.
pub fn delay(policy: &BootPolicy, rounds: u32, random: f64) -> Duration {
    let exponent = rounds.saturating_sub(1).min(30);
    let ceiling = policy.base.saturating_mul(1u32 << exponent).min(policy.max);
    scaleset_github::jittered(ceiling, random)
}

/// The time from `now` to `at` (zero when it has passed).
fn until(now: Timestamp, at: Timestamp) -> Duration {
    let millis = at.unix_millis().saturating_sub(now.unix_millis());
    Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

impl Boots {
    /// Whether a runner may be created at `now`.
    pub fn may_create(&self, now: Timestamp) -> bool {
        self.retry_at.is_none_or(|at| now >= at)
    }

    /// A bootstrap failed at `now`: counted; a new round of waiting begins unless one runs.
    pub fn failed(self, policy: &BootPolicy, now: Timestamp, random: f64) -> (Self, Shown) {
        let failures = self.failures.saturating_add(1);
        let next = match self.retry_at {
            Some(at) if now < at => Self { failures, ..self },
            _ => {
                let rounds = self.rounds.saturating_add(1);
                Self {
                    failures,
                    rounds,
                    retry_at: Some(now.saturating_add(delay(policy, rounds, random))),
                }
            }
        };
        let retry_in = next.retry_at.map_or(Duration::ZERO, |at| until(now, at));
        (next, Shown::BackingOff { failures, retry_in })
    }

    /// A runner of the scale set came online: the count starts again and creates may go on.
    pub fn online(self) -> (Self, Shown) {
        let shown = if self.failures > 0 {
            Shown::Recovered {
                failures: self.failures,
            }
        } else {
            Shown::Unchanged
        };
        (Self::default(), shown)
    }

    /// An operator asked the scale set to retry now: the wait ends at `now` (the count stays
    /// until a runner comes online, so the next failure waits longer still).
    pub fn retry_now(self, now: Timestamp) -> Self {
        // `min`, not a comparison: a wait that ends at `now` already is the same either way,
        // and a comparison there would be a mutant no test can tell apart.
        Self {
            retry_at: self.retry_at.map(|at| at.min(now)),
            ..self
        }
    }
}

#[cfg(test)]
mod tests;
