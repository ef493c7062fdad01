//! Retry bounds and the backoff hint: the machine never reads a clock or sleeps; it tells the
//! caller how long to wait, computed from the attempt number alone.

use std::time::Duration;

/// Which attempt this run is, and how retries back off.
///
/// The caller starts at `attempt = 0`, runs the machine again with `attempt + 1` after an
/// [`Outcome::Retry`](crate::Outcome::Retry), and resets to 0 after any other outcome. Once
/// `attempt + 1 >= max_attempts`, what would be a retry becomes
/// [`Failure::AttemptsExhausted`](crate::Failure::AttemptsExhausted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RetryBounds {
    /// This run's attempt number, from 0.
    pub attempt: u32,
    /// Runs allowed in total before giving up (at least one run always happens).
    pub max_attempts: u32,
    /// The hint after the first attempt; it doubles per attempt.
    pub base_delay: Duration,
    /// The cap of the hint.
    pub max_delay: Duration,
}

impl Default for RetryBounds {
    /// Attempt 0 of 8, backing off 2 s, 4 s, 8 s … up to 2 minutes.
    fn default() -> Self {
        Self {
            attempt: 0,
            max_attempts: 8,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(120),
        }
    }
}

impl RetryBounds {
    /// The wait before the next attempt: `base_delay × 2^attempt`, capped at `max_delay`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let bounds = scaleset_adopt::RetryBounds {
    ///     attempt: 2,
    ///     max_attempts: 10,
    ///     base_delay: Duration::from_millis(10),
    ///     max_delay: Duration::from_millis(50),
    /// };
    /// assert_eq!(bounds.backoff(), Duration::from_millis(40));
    /// assert_eq!(scaleset_adopt::RetryBounds { attempt: 3, ..bounds }.backoff(), Duration::from_millis(50));
    /// ```
    pub fn backoff(&self) -> Duration {
        let factor = 1u32.checked_shl(self.attempt.min(31)).unwrap_or(u32::MAX);
        self.base_delay
            .checked_mul(factor)
            .map_or(self.max_delay, |delay| delay.min(self.max_delay))
    }

    /// Whether this is the last attempt allowed.
    pub fn is_last(&self) -> bool {
        self.attempt.saturating_add(1) >= self.max_attempts
    }
}
