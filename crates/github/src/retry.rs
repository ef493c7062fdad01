//! Retry policy (protocol §9): which failures are retried, how long to wait between attempts,
//! `Retry-After`, and the injectable [`Sleeper`] that lets tests observe waits without waiting.
//!
//! Backoffs are jittered (equal jitter: between half the computed wait and all of it, drawn
//! from an injectable [`RandomSource`]), so that thousands of clients that failed together (a
//! GitHub outage) do not retry together when it ends. A wait the server advertised is honoured
//! as given (capped): it is the server's own schedule, and waiting less would break it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Attempts, backoff and `Retry-After` limits for every call.
///
/// Defaults follow the official clients: 5 attempts, waits of up to 1, 2, 4 and 8 s (doubling
/// from `base_delay`, capped at `max_delay` = 30 s, each jittered down to no less than half),
/// and `Retry-After` honoured on 429 and 503.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Total attempts per call, including the first (at least 1).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubles for each further attempt.
    pub base_delay: Duration,
    /// Upper bound of the doubling backoff.
    pub max_delay: Duration,
    /// Upper bound applied to a server's `Retry-After`.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// A policy with the given attempts and backoff bounds (`Retry-After` capped at `max_delay`
    /// × 10).
    pub fn new(max_attempts: u32, base_delay: Duration, max_delay: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            base_delay,
            max_delay,
            max_retry_after: max_delay.saturating_mul(10),
        }
    }

    /// A single attempt, no retries. A failure is then returned as itself (e.g.
    /// [`Error::Timeout`](crate::Error::Timeout) or [`Error::Service`](crate::Error::Service)),
    /// never wrapped in [`Error::RetriesExhausted`](crate::Error::RetriesExhausted).
    pub fn never() -> Self {
        Self::new(1, Duration::ZERO, Duration::ZERO)
    }

    /// Sets the cap applied to `Retry-After`.
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// The backoff ceiling after failed attempt number `attempt` (1-based):
    /// `base × 2^(attempt-1)`, capped at `max_delay`. The wait is [`jittered`] below it.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(31);
        self.base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay)
    }

    /// A wait the server advertised, capped at `max_retry_after`.
    pub(crate) fn advertised(&self, wait: Duration) -> Duration {
        wait.min(self.max_retry_after)
    }

    /// The wait before the next attempt: `Retry-After` (capped) when the server sent one on a
    /// 429 or 503, the backoff otherwise, jittered by `unit` (a random draw in `[0, 1)`).
    pub(crate) fn delay(
        &self,
        attempt: u32,
        status: Option<u16>,
        retry_after: Option<Duration>,
        unit: f64,
    ) -> Duration {
        match (status, retry_after) {
            (Some(429 | 503), Some(wait)) => self.advertised(wait),
            _ => jittered(self.backoff(attempt), unit),
        }
    }
}

/// `ceiling` scaled into its upper half by `unit` (a random draw in `[0, 1)`, clamped; a draw
/// that is not a number counts as 1): between `ceiling / 2` and `ceiling`, never longer, so a
/// bound set by [`RetryPolicy::max_delay`] still holds ("equal jitter").
pub fn jittered(ceiling: Duration, unit: f64) -> Duration {
    let unit = if unit.is_finite() {
        unit.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let half = ceiling / 2;
    half + (ceiling - half).mul_f64(unit)
}

/// The random draws (in `[0, 1)`) that jitter the backoff. The default is `fastrand::f64`;
/// tests inject a fixed draw (`1.0` waits the full backoff) to read the schedule exactly.
pub type RandomSource = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The default [`RandomSource`].
pub(crate) fn thread_random() -> RandomSource {
    Arc::new(fastrand::f64)
}

/// The wait a GitHub REST rate-limit answer advertises: its `Retry-After` (seconds or date),
/// or, when `x-ratelimit-remaining` is `0`, the time until `x-ratelimit-reset` (epoch seconds;
/// zero when already past). `None` when the answer advertises neither, which makes a 403 an
/// ordinary refusal.
pub(crate) fn rate_limit_wait(
    retry_after: Option<&str>,
    remaining: Option<&str>,
    reset: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(wait) = retry_after.and_then(|value| parse_retry_after(value, now)) {
        return Some(wait);
    }
    if remaining?.trim() != "0" {
        return None;
    }
    let reset =
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(reset?.trim().parse().ok()?))?;
    Some(reset.duration_since(now).unwrap_or(Duration::ZERO))
}

/// True for statuses the client retries: 429 and every 5xx except 501.
pub fn is_retryable_status(status: u16) -> bool {
    status == 429 || ((500..600).contains(&status) && status != 501)
}

/// Parses a `Retry-After` value: delta seconds or an HTTP date (relative to `now`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Waits between retries. The default uses `tokio::time::sleep`; tests inject one that records
/// the requested durations and returns at once.
pub trait Sleeper: Send + Sync + 'static {
    /// Returns a future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// The default [`Sleeper`]: `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    #[allow(
        clippy::disallowed_methods,
        reason = "the real sleeper between retries (tests pass their own)"
    )]
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A shared sleeper handle.
pub(crate) type SharedSleeper = Arc<dyn Sleeper>;

#[cfg(test)]
mod tests;
