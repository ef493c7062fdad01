//! The one bounded poll of scaleset's tests: wait until a condition holds instead of sleeping
//! a guessed time (STYLE: "no `sleep` to wait for readiness"), and fail, naming what was awaited,
//! when it never does.
//!
//! A dev-dependency only: no library or binary of scaleset uses it. It is a crate of its own
//! because the tests of crates that share nothing else (the provider, the simulator, control,
//! the worker) all need it, and a copy in each drifted (four bounds from 10 s to 180 s).
//!
//! **What it does not do:** assert timing. [`BOUND`] is a ceiling for loaded machines (the
//! suites run side by side on 2 cores), never a claim about how fast something is; speed is
//! measured in benchmarks. Time is tokio's, so under `tokio::time::pause()` the poll advances
//! the paused clock instead of waiting.
//!
//! **Main items:** [`eventually`] (an async check returning `Some(value)` when done),
//! [`try_eventually`] (the same for a check that can fail, e.g. an HTTP call in a test that
//! returns `Result`), [`eventually_holds`] (a plain predicate), [`eventually_seen`] (a check that
//! says what it saw instead, for the failure message).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::atomic::{AtomicU32, Ordering};
//! let polls = AtomicU32::new(0);
//! let seen = scaleset_eventually::eventually("the third poll", || async {
//!     let n = polls.fetch_add(1, Ordering::SeqCst) + 1;
//!     (n == 3).then_some(n)
//! })
//! .await;
//! assert_eq!(seen, 3);
//! scaleset_eventually::eventually_holds("a true predicate", || true).await;
//! # }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

/// How long a poll may wait before the test fails: generous, because a whole controller loop
/// under injected faults on two busy cores has taken over a minute.
pub const BOUND: Duration = Duration::from_secs(180);

/// How often the condition is checked.
pub const EVERY: Duration = Duration::from_millis(20);

/// Polls `check` every [`EVERY`] until it returns `Some`, and returns that value.
///
/// # Panics
///
/// When [`BOUND`] passes first: `timed out waiting until {what}`.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_within(what, BOUND, check).await
}

/// [`eventually`] with a bound of the caller's, for a wait that a test expects to fail
/// quickly (a negative check polls to its bound on every run).
///
/// # Panics
///
/// When `bound` passes first: `timed out waiting until {what}`.
pub async fn eventually_within<T, F, Fut>(what: &str, bound: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let polled = poll(what, bound, || {
        let attempt = check();
        async move { Ok::<_, Infallible>(attempt.await) }
    })
    .await;
    match polled {
        Ok(value) => value,
        Err(never) => match never {},
    }
}

/// [`eventually`] for a check that can fail: the first `Err` ends the poll and is returned, so
/// a broken call fails the test with its own error instead of a timeout.
///
/// # Panics
///
/// When [`BOUND`] passes first: `timed out waiting until {what}`.
pub async fn try_eventually<T, E, F, Fut>(what: &str, check: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, E>>,
{
    poll(what, BOUND, check).await
}

/// Polls the predicate `check` every [`EVERY`] until it is true.
///
/// # Panics
///
/// When [`BOUND`] passes first: `timed out waiting until {what}`.
pub async fn eventually_holds(what: &str, mut check: impl FnMut() -> bool) {
    eventually(what, || std::future::ready(check().then_some(()))).await;
}

/// [`eventually`] for a check that says what it sees while it waits: `Err(seen)` means "not
/// yet" (`seen` anything that prints: a sentence, a row, a typed state), and the last `seen` is in the failure message, so a timeout tells where the wait stuck
/// (the calls a provider answered, the row as it stood) instead of only that it did.
///
/// # Panics
///
/// When [`BOUND`] passes first: `timed out waiting until {what}; last seen: {seen}`.
pub async fn eventually_seen<T, S, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, S>>,
    S: std::fmt::Display,
{
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let seen = match check().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what} (bound {BOUND:?}); last seen: {seen}"
        );
        pause().await;
    }
}

/// A poll loop written out, for a check that keeps state from one attempt to the next (what it
/// has seen so far): the loop calls [`Polling::again`] where it would otherwise sleep, and the
/// bound and the pause stay here.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let polling = scaleset_eventually::Polling::new("three attempts");
/// let mut seen = Vec::new();
/// while seen.len() < 3 {
///     seen.push(seen.len());
///     polling.again(|| format!("seen {seen:?}")).await;
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Polling {
    what: String,
    bound: Duration,
    deadline: tokio::time::Instant,
}

impl Polling {
    /// A loop bounded by [`BOUND`].
    pub fn new(what: impl Into<String>) -> Self {
        Self::within(what, BOUND)
    }

    /// A loop bounded by `bound`.
    pub fn within(what: impl Into<String>, bound: Duration) -> Self {
        Self {
            what: what.into(),
            bound,
            deadline: tokio::time::Instant::now() + bound,
        }
    }

    /// Pauses before the next attempt.
    ///
    /// # Panics
    ///
    /// When the bound has passed: `timed out waiting until {what} (bound …); last seen: {seen}`.
    pub async fn again(&self, seen: impl FnOnce() -> String) {
        assert!(
            tokio::time::Instant::now() < self.deadline,
            "timed out waiting until {} (bound {:?}); last seen: {}",
            self.what,
            self.bound,
            seen()
        );
        pause().await;
    }
}

/// The one poll loop behind every function here.
async fn poll<T, E, F, Fut>(what: &str, bound: Duration, mut check: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, E>>,
{
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what} (bound {bound:?})"
        );
        pause().await;
    }
}

/// The pause between two checks: the one sleep a test may take (clippy.toml forbids the rest).
#[allow(
    clippy::disallowed_methods,
    reason = "the poll's pause between checks: what every other test waits through"
)]
async fn pause() {
    tokio::time::sleep(EVERY).await;
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn returns_the_first_value_and_stops_polling() {
        let polls = Cell::new(0);
        let value = eventually("the fifth poll", || {
            polls.set(polls.get() + 1);
            std::future::ready((polls.get() == 5).then_some("done"))
        })
        .await;
        assert_eq!((value, polls.get()), ("done", 5));
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "timed out waiting until the impossible")]
    async fn fails_naming_what_it_waited_for_once_the_bound_passes() {
        eventually_holds("the impossible", || false).await;
    }

    #[tokio::test(start_paused = true)]
    async fn try_eventually_returns_the_first_error_without_polling_again() {
        let polls = Cell::new(0);
        let result: Result<(), &str> = try_eventually("a failing call", || {
            polls.set(polls.get() + 1);
            std::future::ready(if polls.get() == 2 {
                Err("refused")
            } else {
                Ok(None)
            })
        })
        .await;
        assert_eq!((result, polls.get()), (Err("refused"), 2));
    }

    #[tokio::test(start_paused = true)]
    async fn try_eventually_returns_the_first_value() {
        let polls = Cell::new(0);
        let result: Result<u32, &str> = try_eventually("the third poll", || {
            polls.set(polls.get() + 1);
            std::future::ready(Ok((polls.get() == 3).then_some(polls.get())))
        })
        .await;
        assert_eq!(result, Ok(3));
    }

    #[tokio::test(start_paused = true)]
    async fn eventually_seen_returns_the_first_value() {
        let polls = Cell::new(0);
        let value = eventually_seen("the fourth poll", || {
            polls.set(polls.get() + 1);
            std::future::ready(if polls.get() == 4 {
                Ok(polls.get())
            } else {
                Err(format!("poll {}", polls.get()))
            })
        })
        .await;
        assert_eq!(value, 4);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(
        expected = "timed out waiting until the impossible (bound 180s); last seen: still 7"
    )]
    async fn eventually_seen_fails_with_the_last_thing_it_saw() {
        eventually_seen("the impossible", || {
            std::future::ready(Err::<(), _>("still 7".to_owned()))
        })
        .await;
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(
        expected = "timed out waiting until a loop ends (bound 1s); last seen: round 51"
    )]
    async fn a_written_out_loop_fails_at_its_bound_with_what_it_saw() {
        let polling = Polling::within("a loop ends", Duration::from_secs(1));
        let mut round = 0;
        loop {
            round += 1;
            polling.again(|| format!("round {round}")).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn waits_about_the_bound_before_failing() {
        let start = tokio::time::Instant::now();
        let waited = tokio::spawn(async {
            eventually_within("never", Duration::from_secs(3), || {
                std::future::ready(None::<()>)
            })
            .await;
        })
        .await;
        assert!(waited.is_err(), "it panicked");
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_secs(3) && elapsed < Duration::from_secs(4),
            "{elapsed:?}"
        );
    }
}
