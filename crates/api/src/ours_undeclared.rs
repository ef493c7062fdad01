//! "Ours, undeclared" kept at hand for the status page and `/metrics`: the scale sets on GitHub
//! that carry our owner label but that neither the store holds nor the configuration file
//! declares (after a database loss, those made through the API). Listing them costs one GitHub
//! call per stored entity, so a page view or a scrape never waits for it: each one that finds
//! the last listing older than [`REFRESH`] starts one in the background (never two at once) and
//! shows the last one, or says that none finished yet. A listing that could not reach every
//! entity says how many it missed, so a count of zero is only shown when it is one.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use scaleset_store::Timestamp;

/// How old a listing may be before a page view or a scrape starts the next one: at 1,000
/// entities, 1,000 REST calls every 10 minutes (6,000 an hour, inside the budget the worker
/// leaves; docs/operations.md).
pub(crate) const REFRESH: Duration = Duration::from_secs(600);

/// How long one background listing may take over every entity (each call retries for about
/// 15 s when GitHub does not answer): the entities not listed by then are counted as unlisted.
pub(crate) const WITHIN: Duration = Duration::from_secs(60);

/// What the last listing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Known {
    /// No listing has finished since this process started.
    NotYet,
    /// A listing finished at `at`.
    Listed {
        at: Timestamp,
        /// `name (entity)` of each set found.
        found: Vec<String>,
        /// `entity: reason` of each entity that could not be listed.
        unlisted: Vec<String>,
    },
    /// The store could not be read to list.
    Failed { at: Timestamp, reason: String },
}

#[derive(Debug)]
struct Inner {
    known: Known,
    /// When the running or last listing started (monotonic: a due check, not a display).
    started: Option<tokio::time::Instant>,
    running: bool,
}

/// The last listing, shared by every request of the process.
#[derive(Debug)]
pub(crate) struct OursUndeclaredCache {
    inner: Mutex<Inner>,
}

impl Default for OursUndeclaredCache {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                known: Known::NotYet,
                started: None,
                running: false,
            }),
        }
    }
}

impl OursUndeclaredCache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding it leaves plain data: keep serving it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The last listing.
    pub(crate) fn known(&self) -> Known {
        self.lock().known.clone()
    }

    /// Whether a listing is due at `now` (none started yet, or the last one started
    /// [`REFRESH`] ago), marking one as running when it is.
    pub(crate) fn claim(&self, now: tokio::time::Instant) -> bool {
        let mut inner = self.lock();
        let due = !inner.running
            && inner
                .started
                .is_none_or(|started| now.duration_since(started) >= REFRESH);
        if due {
            inner.running = true;
            inner.started = Some(now);
        }
        due
    }

    pub(crate) fn finish(&self, known: Known) {
        let mut inner = self.lock();
        inner.known = known;
        inner.running = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_due_at_first_then_not_while_one_runs_nor_until_refresh_has_passed() {
        let cache = OursUndeclaredCache::default();
        let start = tokio::time::Instant::now();
        assert!(cache.claim(start), "none started yet: due");
        assert!(
            !cache.claim(start + REFRESH * 2),
            "one is running: never two"
        );
        cache.finish(Known::NotYet);
        assert!(
            !cache.claim(start + REFRESH - Duration::from_secs(1)),
            "not before REFRESH"
        );
        assert!(cache.claim(start + REFRESH), "due once REFRESH has passed");
    }
}
