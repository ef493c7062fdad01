//! When a listener writes its scale set's sample for the status page's charts
//! (`ScaleSetStore::record_sample`), and the job start latency it carries. Pure: the listener
//! passes the time and the figures in.
//!
//! A sample is considered once a `sample_interval` (a minute by default) and written only when
//! it says something the last one did not: its figures changed, a job started since, or the
//! last is [`SAMPLE_HELD_AT_MOST`] old. The page draws each minute without a sample as the last
//! one, so an idle scale set costs one row every [`SAMPLE_HELD_AT_MOST`] instead of one a
//! minute (figures in docs/benchmarks.md, "Session 26"). The first is written as soon as a
//! listener serves, so a restarted worker's charts resume at once.

use std::time::Duration;

use scaleset_store::SAMPLE_HELD_AT_MOST;
use tokio::time::Instant;

/// The default of `Settings::sample_interval`, for the tests.
#[cfg(test)]
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(60);

/// The figures of a sample that the page draws as held until the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Figures {
    pub(crate) jobs_waiting: u32,
    pub(crate) idle: u32,
    pub(crate) busy: u32,
    pub(crate) starting: u32,
}

/// A listener's sampling state.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    /// When the last sample was written, and its figures.
    last: Option<(Instant, Figures)>,
    /// When the figures were last considered, written or not.
    considered: Option<Instant>,
    /// The longest queued-to-started wait of the jobs that started since the last sample.
    slowest_start: Option<Duration>,
}

impl Sampler {
    /// A job started `latency` after it was queued.
    pub(crate) fn started(&mut self, latency: Duration) {
        self.slowest_start = Some(self.slowest_start.map_or(latency, |s| s.max(latency)));
    }

    /// Whether the figures are to be considered at `now`: one `every` after they last were.
    /// Reading them can cost a list of the rows, so the listener asks this first.
    pub(crate) fn due(&self, now: Instant, every: Duration) -> bool {
        self.considered
            .is_none_or(|at| now.saturating_duration_since(at) >= every)
    }

    /// Considers `figures` at `now`: the start latency to write with them when a sample is to
    /// be written (`Some(None)` when no job started), `None` when the last sample still says
    /// everything (same figures, no job started, and younger than [`SAMPLE_HELD_AT_MOST`]).
    /// A written sample starts the next one's start latency afresh.
    pub(crate) fn consider(&mut self, now: Instant, figures: Figures) -> Option<Option<Duration>> {
        self.considered = Some(now);
        let news = match self.last {
            None => true,
            Some((at, last)) => {
                last != figures
                    || self.slowest_start.is_some()
                    || now.saturating_duration_since(at) >= SAMPLE_HELD_AT_MOST
            }
        };
        if !news {
            return None;
        }
        self.last = Some((now, figures));
        Some(self.slowest_start.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Figures = Figures {
        jobs_waiting: 0,
        idle: 2,
        busy: 0,
        starting: 0,
    };

    #[test]
    fn figures_are_considered_at_once_then_once_an_interval() {
        let start = Instant::now();
        let mut sampler = Sampler::default();
        assert!(sampler.due(start, SAMPLE_EVERY), "the first at once");
        assert_eq!(
            sampler.consider(start, IDLE),
            Some(None),
            "the first is written"
        );
        assert!(!sampler.due(start + Duration::from_secs(59), SAMPLE_EVERY));
        assert!(sampler.due(start + SAMPLE_EVERY, SAMPLE_EVERY));
        assert!(sampler.due(start + Duration::from_secs(61), SAMPLE_EVERY));
        assert!(sampler.due(start, Duration::ZERO), "every time when 0");
    }

    #[test]
    fn unchanged_figures_are_written_again_only_when_the_last_sample_is_held_at_most() {
        let start = Instant::now();
        let mut sampler = Sampler::default();
        assert!(sampler.consider(start, IDLE).is_some());
        let minutes = SAMPLE_HELD_AT_MOST.as_secs() / 60;
        for minute in 1..minutes {
            let now = start + Duration::from_secs(60 * minute);
            assert!(sampler.due(now, SAMPLE_EVERY));
            assert_eq!(sampler.consider(now, IDLE), None, "minute {minute}");
            assert!(
                !sampler.due(now, SAMPLE_EVERY),
                "considered, so not due again"
            );
        }
        let held = start + SAMPLE_HELD_AT_MOST;
        assert_eq!(sampler.consider(held, IDLE), Some(None), "written again");
        assert_eq!(
            sampler.consider(held + SAMPLE_EVERY, IDLE),
            None,
            "held from the new one"
        );
    }

    #[test]
    fn changed_figures_are_written_at_the_next_interval() {
        let start = Instant::now();
        let mut sampler = Sampler::default();
        assert!(sampler.consider(start, IDLE).is_some());
        let busy = Figures {
            busy: 1,
            idle: 1,
            ..IDLE
        };
        let next = start + SAMPLE_EVERY;
        assert_eq!(sampler.consider(next, busy), Some(None));
        assert_eq!(sampler.consider(next + SAMPLE_EVERY, busy), None);
        assert_eq!(
            sampler.consider(next + SAMPLE_EVERY * 2, IDLE),
            Some(None),
            "a change back is a change"
        );
    }

    #[test]
    fn a_sample_carries_the_slowest_start_since_the_last_and_a_start_is_news() {
        let start = Instant::now();
        let mut sampler = Sampler::default();
        sampler.started(Duration::from_secs(3));
        sampler.started(Duration::from_secs(9));
        sampler.started(Duration::from_secs(4));
        assert_eq!(
            sampler.consider(start, IDLE),
            Some(Some(Duration::from_secs(9)))
        );
        assert_eq!(
            sampler.consider(start + SAMPLE_EVERY, IDLE),
            None,
            "started afresh"
        );
        sampler.started(Duration::from_secs(1));
        assert_eq!(
            sampler.consider(start + SAMPLE_EVERY * 2, IDLE),
            Some(Some(Duration::from_secs(1))),
            "a start with the same figures is still written"
        );
    }
}
