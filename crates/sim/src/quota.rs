//! The simulated REST rate limit (GitHub's `core` resource): the REST calls the simulator
//! answers are counted in hourly windows of simulated time, and `GET /api/v3/rate_limit`
//! reports the count. The limit is reported, not enforced; the `restRateLimit` fault is what
//! refuses calls, and while it is armed the quota reads as exhausted.

use std::time::Duration;

use crate::clock::SimTime;

/// Requests per window, as github.com grants a PAT or an App installation.
pub(crate) const CORE_LIMIT: u64 = 5000;

/// How long a window lasts.
const WINDOW: Duration = Duration::from_secs(3600);

/// The `core` quota as `/rate_limit` and the `x-ratelimit-*` headers report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QuotaStatus {
    /// Requests per window.
    pub(crate) limit: u64,
    /// Requests left in the window.
    pub(crate) remaining: u64,
    /// When the window resets, in seconds since the epoch.
    pub(crate) reset: u64,
    /// Requests made in the window.
    pub(crate) used: u64,
}

impl QuotaStatus {
    /// An exhausted quota that resets at `reset` (epoch seconds).
    pub(crate) fn exhausted(reset: u64) -> Self {
        Self {
            limit: CORE_LIMIT,
            remaining: 0,
            reset,
            used: CORE_LIMIT,
        }
    }
}

/// Counts REST requests per window. The first request after a window ends opens the next.
#[derive(Debug, Default)]
pub(crate) struct RestQuota {
    window_reset: Option<SimTime>,
    used: u64,
}

impl RestQuota {
    fn roll(&mut self, now: SimTime) -> SimTime {
        match self.window_reset {
            Some(reset) if now < reset => reset,
            _ => {
                let reset = now.plus(WINDOW);
                self.window_reset = Some(reset);
                self.used = 0;
                reset
            }
        }
    }

    /// Counts one REST request made at `now`.
    pub(crate) fn record(&mut self, now: SimTime) {
        self.roll(now);
        self.used = self.used.saturating_add(1);
    }

    /// The quota as of `now`.
    pub(crate) fn status(&mut self, now: SimTime) -> QuotaStatus {
        let reset = self.roll(now);
        QuotaStatus {
            limit: CORE_LIMIT,
            remaining: CORE_LIMIT.saturating_sub(self.used),
            reset: reset.as_secs(),
            used: self.used,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_count_down_within_a_window_and_a_new_window_starts_full() {
        let start = SimTime::from_millis(1_000_000);
        let mut quota = RestQuota::default();
        let fresh = quota.status(start);
        assert_eq!(
            (fresh.limit, fresh.remaining, fresh.used),
            (CORE_LIMIT, CORE_LIMIT, 0)
        );
        assert_eq!(fresh.reset, start.plus(WINDOW).as_secs());
        quota.record(start);
        quota.record(start.plus(Duration::from_secs(10)));
        let later = quota.status(start.plus(Duration::from_secs(20)));
        assert_eq!((later.remaining, later.used), (CORE_LIMIT - 2, 2));
        assert_eq!(later.reset, fresh.reset, "the window does not move");
        let next = quota.status(start.plus(WINDOW));
        assert_eq!((next.remaining, next.used), (CORE_LIMIT, 0));
        assert_eq!(next.reset, start.plus(WINDOW).plus(WINDOW).as_secs());
    }
}
