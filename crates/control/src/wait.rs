//! The one wait of this crate (issue 30 item 2): no step sleeps. A step returns what to do next
//! and its task waits here, cancel-aware (a stop ends the wait at once) and, before a retry,
//! jittered. Every wait in `src` goes through [`wait_until`]: the scale set task's and the drain
//! task's waits between passes, the listener's lease renewal raced with its long-poll and its
//! backoff after a failed poll, the controller's watch tick and the lease-renewal batch window.
//! Clippy (`clippy.toml`) refuses a sleep anywhere else. A module of its own,
//! depending on nothing else here, so that any module may wait.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use scaleset_github::jittered;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The deadline passed.
    Elapsed,
    /// `cancel` fired first (or at the same time: a stop wins).
    Cancelled,
}

/// The one wait of this crate: until `deadline`, unless `cancel` fires first. Nothing else in
/// `src` sleeps (module documentation).
#[allow(
    clippy::disallowed_methods,
    reason = "the one wait of the control crate: clippy.toml refuses a sleep anywhere else"
)]
pub(crate) async fn wait_until(cancel: &CancellationToken, deadline: Instant) -> Waited {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Waited::Cancelled,
        () = tokio::time::sleep_until(deadline) => Waited::Elapsed,
    }
}

/// `wait_until` `after` from now. A wait too long to have a deadline (a setting of years)
/// lasts until `cancel`.
pub async fn wait_for(cancel: &CancellationToken, after: Duration) -> Waited {
    match Instant::now().checked_add(after) {
        Some(deadline) => wait_until(cancel, deadline).await,
        None => {
            cancel.cancelled().await;
            Waited::Cancelled
        }
    }
}

/// [`wait_for`] a jittered `after` (between half of it and all of it, [`jittered`]), so that
/// thousands of tasks that failed together do not retry together.
pub(crate) async fn wait_jittered(cancel: &CancellationToken, after: Duration) -> Waited {
    wait_for(cancel, jittered(after, fastrand::f64())).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_at_its_deadline() {
        let cancel = CancellationToken::new();
        let start = Instant::now();
        let deadline = start + Duration::from_secs(30);
        assert_eq!(wait_until(&cancel, deadline).await, Waited::Elapsed);
        assert_eq!(Instant::now(), deadline, "not a moment sooner");
        assert_eq!(
            wait_for(&cancel, Duration::from_secs(5)).await,
            Waited::Elapsed
        );
        assert_eq!(Instant::now(), deadline + Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_ends_a_wait_at_once_and_wins_a_tie() {
        let cancel = CancellationToken::new();
        let start = Instant::now();
        let stop = cancel.clone();
        tokio::spawn(async move {
            wait_for(&CancellationToken::new(), Duration::from_secs(1)).await;
            stop.cancel();
        });
        assert_eq!(
            wait_for(&cancel, Duration::from_secs(3600)).await,
            Waited::Cancelled
        );
        assert_eq!(Instant::now(), start + Duration::from_secs(1));
        // Already stopped, deadline already past: the stop wins.
        assert_eq!(wait_until(&cancel, start).await, Waited::Cancelled);
        assert_eq!(
            wait_jittered(&cancel, Duration::from_secs(10)).await,
            Waited::Cancelled
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_too_long_for_a_deadline_lasts_until_the_stop() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(wait_for(&cancel, Duration::MAX).await, Waited::Cancelled);
    }

    #[tokio::test(start_paused = true)]
    async fn a_jittered_wait_lasts_between_half_and_all_of_it() {
        let cancel = CancellationToken::new();
        for _ in 0..20 {
            let start = Instant::now();
            assert_eq!(
                wait_jittered(&cancel, Duration::from_secs(10)).await,
                Waited::Elapsed
            );
            let waited = Instant::now() - start;
            assert!(
                (Duration::from_secs(5)..=Duration::from_secs(10)).contains(&waited),
                "{waited:?}"
            );
        }
    }
}
