//! The demo's steady, bounded job stream: every tick, one job for one of the fleet's scale sets
//! on the simulated GitHub, chosen at random among those with fewer than the bound of
//! unfinished jobs, each running for a random while in simulated time.

use std::ops::RangeInclusive;
use std::time::Duration;

use scaleset_sim::{JobSpec, Simulator};
use tokio_util::sync::CancellationToken;

use crate::fleet::FLEET;

/// The shape of the job stream.
#[derive(Debug, Clone)]
pub struct JobStream {
    /// Time between two jobs.
    pub every: Duration,
    /// How long each job runs, in seconds (chosen uniformly).
    pub run_seconds: RangeInclusive<u32>,
    /// The most unfinished jobs one scale set gets; a set at the bound gets none until some
    /// finish.
    pub max_unfinished: usize,
}

impl Default for JobStream {
    fn default() -> Self {
        Self {
            every: Duration::from_secs(3),
            run_seconds: 10..=40,
            max_unfinished: 4,
        }
    }
}

/// Feeds jobs until `stop`.
#[allow(
    clippy::disallowed_methods,
    reason = "the demo's job stream queues a job every interval"
)]
pub(crate) async fn run(sim: Simulator, stream: JobStream, stop: CancellationToken) {
    let mut rng = fastrand::Rng::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(stream.every) => {}
        }
        let state = sim.state();
        let open: Vec<i64> = state
            .scale_sets
            .iter()
            .filter(|s| FLEET.iter().any(|d| d.name == s.name))
            .filter(|s| s.session.is_some())
            .filter(|s| {
                state
                    .jobs_of(s.id)
                    .filter(|j| j.state != "completed")
                    .count()
                    < stream.max_unfinished
            })
            .map(|s| s.id)
            .collect();
        if open.is_empty() {
            continue;
        }
        let id = open[rng.usize(..open.len())];
        let mut spec = JobSpec::count(1);
        spec.run_seconds = Some(f64::from(rng.u32(stream.run_seconds.clone())));
        spec.display_name = Some(format!("build #{}", rng.u32(1000..10_000)));
        if let Err(e) = sim.enqueue_jobs(id, &spec) {
            tracing::warn!(scale_set.github_id = id, error = %e, "cannot enqueue a demo job");
        }
    }
}
