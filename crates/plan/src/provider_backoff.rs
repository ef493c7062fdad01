//! The provider back-off planner (issue 33 item 3): what a scale set's task does after its
//! provider failed to create or delete an instance. Pure (no I/O, no clock: "now" and the
//! random draw come in as values); the scaler (`scaler.rs`) asks [`ProviderHealth::may_call`]
//! before each create or delete, feeds every answer back through [`ProviderHealth::failed`] or
//! [`ProviderHealth::succeeded`], and records in the store what [`Attention`] says.
//!
//! The rules (each a unit test beside it):
//! - after `n` failures in a row the next call waits `base × 2^(n-1)`, capped at `max`, and
//!   jittered between half of it and all of it (the GitHub client's one jitter rule), so the
//!   scale sets of one failing provider do not retry together;
//! - until then no create or delete is tried (a failing provider is never hot-looped, whatever
//!   wakes the task: a poll, a message, a new pass);
//! - from the `flag_after`-th failure in a row on, the scale set is flagged as needing attention
//!   with the provider's own message (each failure refreshes it); the first success after a flag
//!   clears it, and resets the count;
//! - when another scale set of the same provider gets an answer from it, the wait ends at once
//!   ([`ProviderHealth::provider_answered`]): the provider is back.

use std::time::{Duration, Instant};

/// The back-off settings (`Settings::provider_backoff_base` and its siblings, `scaleset-settings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// The wait after the first failure; doubles per failure in a row.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
    /// After how many failures in a row the scale set needs attention (at least 1).
    pub flag_after: u32,
}

/// One scale set's provider, as its task last found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProviderHealth {
    /// Failed creates and deletes in a row.
    pub failures: u32,
    /// No create or delete before this.
    pub retry_at: Option<Instant>,
}

/// What the store is to show after an answer of the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attention {
    /// Nothing to record.
    Unchanged,
    /// Flag the scale set as needing attention with the provider's message; the next try is
    /// after `retry_in`.
    Flag {
        /// The failures in a row so far.
        failures: u32,
        /// The wait before the next try.
        retry_in: Duration,
    },
    /// The provider answers again: clear the flag.
    Clear,
}

/// The wait before the next try after `failures` failures in a row, jittered by `random` (a
/// draw in `[0, 1)`): `base × 2^(failures-1)` capped at `max`, between half of it and all of it.
pub fn delay(policy: &BackoffPolicy, failures: u32, random: f64) -> Duration {
    let exponent = failures.saturating_sub(1).min(30);
    let ceiling = policy.base.saturating_mul(1u32 << exponent).min(policy.max);
    scaleset_github::jittered(ceiling, random)
}

impl ProviderHealth {
    /// Whether a create or delete may be tried at `now`.
    pub fn may_call(&self, now: Instant) -> bool {
        match self.retry_at {
            Some(at) => now >= at,
            // A wait too long for a deadline (a setting of years) lasts until the task stops.
            None => self.failures == 0,
        }
    }

    /// After a failed create or delete at `now`: the next try is backed off, and the scale set
    /// is flagged once `flag_after` failures came in a row.
    pub fn failed(self, policy: &BackoffPolicy, now: Instant, random: f64) -> (Self, Attention) {
        let failures = self.failures.saturating_add(1);
        let retry_in = delay(policy, failures, random);
        let next = Self {
            failures,
            retry_at: now.checked_add(retry_in),
        };
        // `failures` is at least 1, so a `flag_after` of 0 flags the first failure as 1 does.
        let attention = if failures >= policy.flag_after {
            Attention::Flag { failures, retry_in }
        } else {
            Attention::Unchanged
        };
        (next, attention)
    }

    /// Another scale set of the same provider got an answer from it at `now`: the provider
    /// answers again, so this one's wait ends now rather than being slept out (a 55 s outage
    /// must not keep a scale set waiting minutes more). The count, and so any flag, stays
    /// until this scale set's own call works.
    pub fn provider_answered(self, now: Instant) -> Self {
        if self.failures == 0 {
            return self;
        }
        let due = self.retry_at.map_or(now, |at| at.min(now));
        Self {
            retry_at: Some(due),
            ..self
        }
    }

    /// After a create or delete that worked: the count starts again, and a flag is cleared.
    pub fn succeeded(self, policy: &BackoffPolicy) -> (Self, Attention) {
        let attention = if self.failures >= policy.flag_after.max(1) {
            Attention::Clear
        } else {
            Attention::Unchanged
        };
        (Self::default(), attention)
    }
}

#[cfg(test)]
mod tests;
