//! When a listener writes its scale set's sample for the status page's charts
//! (`ScaleSetStore::record_sample`), and the job start latency it carries. Pure: the listener
//! passes the time in. One sample a minute per scale set at most, so the store holds about 60
//! per scale set (it prunes to the last hour); the first is written as soon as a listener
//! serves, so a restarted worker's charts resume at once.

use std::time::Duration;

use tokio::time::Instant;

/// The default of `Settings::sample_interval`, for the tests.
#[cfg(test)]
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(60);

/// A listener's sampling state.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    /// When the last sample was written.
    last: Option<Instant>,
    /// The longest queued-to-started wait of the jobs that started since.
    slowest_start: Option<Duration>,
}

impl Sampler {
    /// A job started `latency` after it was queued.
    pub(crate) fn started(&mut self, latency: Duration) {
        self.slowest_start = Some(self.slowest_start.map_or(latency, |s| s.max(latency)));
    }

    /// Whether a sample is due at `now`, one `every` after the last.
    pub(crate) fn due(&self, now: Instant, every: Duration) -> bool {
        self.last
            .is_none_or(|last| now.saturating_duration_since(last) >= every)
    }

    /// Marks a sample written at `now`; returns the start latency it carries (and starts the
    /// next minute's afresh).
    pub(crate) fn taken(&mut self, now: Instant) -> Option<Duration> {
        self.last = Some(now);
        self.slowest_start.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_due_at_once_then_once_a_minute() {
        let start = Instant::now();
        let mut sampler = Sampler::default();
        assert!(sampler.due(start, SAMPLE_EVERY), "the first at once");
        assert_eq!(sampler.taken(start), None);
        assert!(!sampler.due(start + Duration::from_secs(59), SAMPLE_EVERY));
        assert!(sampler.due(start + SAMPLE_EVERY, SAMPLE_EVERY));
        assert!(sampler.due(start + Duration::from_secs(61), SAMPLE_EVERY));
        assert!(sampler.due(start, Duration::ZERO), "every time when 0");
    }

    #[test]
    fn a_sample_carries_the_slowest_start_since_the_last() {
        let start = Instant::now();
        let mut sampler = Sampler::default();
        sampler.started(Duration::from_secs(3));
        sampler.started(Duration::from_secs(9));
        sampler.started(Duration::from_secs(4));
        assert_eq!(sampler.taken(start), Some(Duration::from_secs(9)));
        assert_eq!(sampler.taken(start + SAMPLE_EVERY), None, "started afresh");
        sampler.started(Duration::from_secs(1));
        assert_eq!(sampler.taken(start), Some(Duration::from_secs(1)));
    }
}
