//! `/metrics` size and render time at many scale sets (docs/benchmarks.md, "Metrics"):
//! registers the control loop's metrics, observes SETS scale sets (each with runners, jobs and
//! a message age, its histograms filled), then renders the registry RUNS times and prints the
//! size and the median and worst render time.
//!
//! `cargo run --release -p scaleset-control --example metrics_size -- 10000 20`

use std::time::{Duration, Instant};

use prometheus_client::registry::Registry;
use scaleset_control::{Metrics, SetLabels, SetReading};
use scaleset_store::{InstanceStatus, ScaleSetId, ScaleSetState};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let sets: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(20), |a| a.parse())?;
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    metrics.provider_known("lxd");
    let readings: Vec<SetReading> = (0..sets)
        .map(|i| SetReading {
            id: ScaleSetId(uuid::Uuid::new_v4()),
            labels: SetLabels {
                // Realistic lengths: a 24-character name, an organization entity.
                scale_set: format!("linux-x64-large-{i:08}").into(),
                entity_kind: "organization",
                entity_name: format!("acme-{:03}", i % 100).into(),
            },
            state: ScaleSetState::Ready,
            enabled: true,
            jobs_waiting: 1,
            desired_runners: 3,
            max_runners: 10,
            min_idle: 1,
            last_message_age: Some(Duration::from_secs(4)),
            runners: vec![(InstanceStatus::Running, 1), (InstanceStatus::Busy, 2)],
        })
        .collect();
    let rss_before = rss_bytes();
    let started = Instant::now();
    metrics.observe_scale_sets(&readings);
    let observe = started.elapsed();
    // A supervisor tick over sets already known (their counters and histograms exist).
    let started = Instant::now();
    metrics.observe_scale_sets(&readings);
    let observe_again = started.elapsed();
    for reading in &readings {
        for family in [
            &metrics.job_queued_to_runner_requested,
            &metrics.runner_requested_to_online,
            &metrics.job_assigned_to_started,
            &metrics.job_started_to_completed,
        ] {
            metrics.observe_timing(family, reading.id, 42.0);
        }
    }
    // Counted from after the readings were built: the label strings the registry shares with
    // them (one name and one entity per set, ~100 bytes) are not in this figure.
    drop(readings);
    let held_per_set = rss_bytes().saturating_sub(rss_before) / sets.max(1) as u64;
    let mut times = Vec::with_capacity(runs);
    let mut size = 0;
    for _ in 0..runs.max(1) {
        let mut body = String::new();
        let started = Instant::now();
        prometheus_client::encoding::text::encode(&mut body, &registry)?;
        times.push(started.elapsed());
        size = body.len();
    }
    times.sort();
    let lines = {
        let mut body = String::new();
        prometheus_client::encoding::text::encode(&mut body, &registry)?;
        body.lines().filter(|l| !l.starts_with('#')).count()
    };
    println!(
        "sets={sets} samples={lines} size_bytes={size} size_per_set={} rss_held_per_set={held_per_set} observe_first_ms={} observe_again_ms={} render_median_ms={} render_max_ms={}",
        size / sets.max(1),
        observe.as_millis(),
        observe_again.as_millis(),
        times[times.len() / 2].as_millis(),
        times[times.len() - 1].as_millis(),
    );
    Ok(())
}

/// This process's resident memory (`VmRSS`), 0 where `/proc` has none.
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
