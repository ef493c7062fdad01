//! The chaos soak (issue 36): the real `scaleset-worker` binary (one on SQLite, three on
//! PostgreSQL) against the simulator over loopback, under a seeded schedule of GitHub faults,
//! provider faults and process events while jobs arrive; at quiescence every job must have been
//! served exactly once and nothing of ours left over or of others touched (`check.rs`).
//!
//! A test target of the worker binary rather than its own crate: it needs the built binary
//! (`CARGO_BIN_EXE_scaleset-worker`) and reuses the worker's process-test harness
//! (`tests/worker/helpers.rs`), and so runs inside `cargo test --workspace` with nothing to wire.
//! `SCALESET_SOAK_SEEDS` (comma-separated) and `SCALESET_SOAK_SECONDS` choose the run; by default
//! one short seed per backend (`docs/operations.md`, "Chaos soak"). `.ci/run` runs a fixed set.
//! The partition soak adds network partitions between each worker and PostgreSQL and GitHub
//! (`link.rs`: a proxy per link) to the same schedule.

#[path = "../worker/helpers.rs"]
#[allow(
    dead_code,
    unreachable_pub,
    reason = "the worker tests' harness, of which the soak uses a part"
)]
mod helpers;

mod check;
#[path = "../worker/link.rs"]
mod link;
mod run;
mod schedule;

use std::time::Duration;

use schedule::Backend;

/// The seeds to run: `SCALESET_SOAK_SEEDS` or `default`.
fn seeds(default: &[u64]) -> Vec<u64> {
    match std::env::var("SCALESET_SOAK_SEEDS") {
        Ok(text) if !text.trim().is_empty() => text
            .split(',')
            .map(|s| {
                s.trim().parse().unwrap_or_else(|e| {
                    panic!("SCALESET_SOAK_SEEDS: {s:?} is not a seed (a whole number): {e}")
                })
            })
            .collect(),
        _ => default.to_vec(),
    }
}

/// The seconds of chaos per seed: `SCALESET_SOAK_SECONDS` or `default`.
fn seconds(default: u64) -> u64 {
    std::env::var("SCALESET_SOAK_SECONDS").map_or(default, |text| {
        text.trim().parse().unwrap_or_else(|e| {
            panic!("SCALESET_SOAK_SECONDS: {text:?} is not a number of seconds: {e}")
        })
    })
}

/// Runs every seed on `backend`, prints each one's figures, and fails with the seed, the
/// schedule and the history of every seed that broke an invariant.
async fn soak_all(backend: Backend, partitions: bool, default_seeds: &[u64], default_seconds: u64) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in seeds(default_seeds) {
        let settings = run::Settings {
            seed,
            seconds: seconds(default_seconds),
            backend,
            settle: Duration::from_secs(180),
            partitions,
        };
        let Some(report) = run::soak(settings).await else {
            return; // the backend is not available here; the harness said why
        };
        ran += 1;
        eprintln!("{}", report.figures());
        if !report.violations.is_empty() {
            failures.push(report.failure());
        }
    }
    assert!(ran > 0, "no seed ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_soak_on_sqlite_serves_every_job_once_and_leaks_nothing() {
    soak_all(Backend::Sqlite, false, &[1], 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_soak_on_postgres_with_three_workers_serves_every_job_once_and_leaks_nothing() {
    soak_all(Backend::Postgres, false, &[2], 20).await;
}

/// The partition soak (docs/operations.md, "Partitions"): three workers on PostgreSQL, each
/// reaching the database and GitHub through proxies of its own that the schedule cuts (drop,
/// reject, slow, one way) and heals while every process keeps running, beside the other
/// faults. Besides the soak's invariants: no worker creates a runner or acquires a job on a
/// scale set later than the lease TTL plus a bound after another took it over, no scale set is
/// created twice, and the fleet converges within a bound after the last heal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_soak_on_postgres_fences_cut_off_workers_and_converges_after_the_heal() {
    soak_all(Backend::Postgres, true, &[3], 20).await;
}
