//! Issue 32 item 1: a worker against the simulator exports every metric from start (counters
//! at 0), per scale set under `scale_set`, `entity_kind` and `entity_name` only, its job timings
//! move after a job, and it exports its own process series and build facts.

use std::collections::BTreeSet;

use crate::helpers::{self, get};
use crate::{finish, start_serving};

/// The value of the one sample of `name` carrying every label of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| {
            line.starts_with(&format!("{name}{{")) || line.starts_with(&format!("{name} "))
        })
        .find(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

fn must(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    sample(text, name, labels).unwrap_or_else(|| panic!("{name}{labels:?} is exported:\n{text}"))
}

/// Every label name used by a `scaleset_` sample.
fn label_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("scaleset_")) {
        let Some((_, rest)) = line.split_once('{') else {
            continue;
        };
        let Some((labels, _)) = rest.rsplit_once('}') else {
            continue;
        };
        for pair in labels.split("\",") {
            if let Some((key, _)) = pair.split_once('=') {
                names.insert(key.to_owned());
            }
        }
    }
    names
}

const SET: [(&str, &str); 3] = [
    ("scale_set", "linux"),
    ("entity_kind", "organization"),
    ("entity_name", "acme"),
];

fn with<'a>(extra: (&'a str, &'a str)) -> Vec<(&'a str, &'a str)> {
    let mut labels = SET.to_vec();
    labels.push(extra);
    labels
}

const TIMINGS: [&str; 4] = [
    "scaleset_job_queued_to_runner_requested_seconds",
    "scaleset_runner_requested_to_online_seconds",
    "scaleset_job_assigned_to_started_seconds",
    "scaleset_job_started_to_completed_seconds",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_exports_every_metric_per_scale_set_and_its_job_timings_move() {
    let spawned_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    let (sim, site) = helpers::linux_site().await;
    let (worker, id) = start_serving(&sim, &site, "linux").await;
    let addr = worker.listen().await;

    // Before any job: the series exist, counters at 0.
    let before = helpers::eventually("the scale set's series are exported", || async {
        let (status, text) = get(addr, "/metrics").await;
        assert_eq!(status, 200);
        (sample(&text, "scaleset_scale_set_state", &with(("state", "ready"))) == Some(1.0))
            .then_some(text)
    })
    .await;
    for kind in ["available", "assigned", "started", "completed"] {
        assert_eq!(
            must(&before, "scaleset_jobs_seen_total", &[("kind", kind)]),
            0.0,
            "jobs_seen is exported at 0 before the first job"
        );
    }
    assert_eq!(must(&before, "scaleset_jobs_acquired_total", &[]), 0.0);
    for name in [
        "scaleset_bootstrap_failures_total",
        "scaleset_bootstrap_deadline_expiries_total",
    ] {
        assert_eq!(must(&before, name, &SET), 0.0, "{name}");
    }
    for timing in TIMINGS {
        assert_eq!(
            must(&before, &format!("{timing}_count"), &SET),
            0.0,
            "{timing} is exported empty before a job"
        );
    }
    assert_eq!(
        must(
            &before,
            "scaleset_provider_calls_total",
            &[("provider", "fake"), ("command", "create")]
        ),
        0.0
    );
    assert_eq!(
        must(
            &before,
            "scaleset_github_retry_after_waits_total",
            &[("endpoint", "get_message")]
        ),
        0.0
    );
    assert_eq!(
        must(
            &before,
            "scaleset_github_calls_total",
            &[("endpoint", "delete_scale_set"), ("class", "fatal")]
        ),
        0.0,
        "every endpoint and class is exported from start"
    );
    // The set's configuration, as gauges (the site declares max_runners = 10, no min_idle).
    assert_eq!(must(&before, "scaleset_scale_set_max_runners", &SET), 10.0);
    assert_eq!(must(&before, "scaleset_scale_set_min_idle", &SET), 0.0);
    assert_eq!(must(&before, "scaleset_scale_set_enabled", &SET), 1.0);
    // The worker's own process (started by this test, so not before it) and its build.
    if cfg!(target_os = "linux") {
        let start = must(&before, "process_start_time_seconds", &[]);
        assert!(
            start >= spawned_at.floor() - 1.0,
            "the worker's start {start} is not before the test's {spawned_at}"
        );
        assert!(must(&before, "process_open_fds", &[]) >= 3.0);
        assert!(must(&before, "process_resident_memory_bytes", &[]) > 0.0);
        must(&before, "process_cpu_seconds_total", &[]);
    }
    assert_eq!(
        must(
            &before,
            "scaleset_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    // One gauge per state: the current one 1, the others 0.
    assert_eq!(
        must(
            &before,
            "scaleset_scale_set_state",
            &with(("state", "error"))
        ),
        0.0
    );

    sim.enqueue(id, 2);
    sim.all_running("two runners run the two jobs", id, 2).await;
    // The gauges follow at the supervisor's next watch.
    helpers::eventually(
        "the two runners are counted under the scale set",
        || async {
            let text = get(addr, "/metrics").await.1;
            let counted = sample(
                &text,
                "scaleset_scale_set_runners",
                &with(("status", "busy")),
            )? + sample(
                &text,
                "scaleset_scale_set_runners",
                &with(("status", "running")),
            )?;
            (counted == 2.0).then_some(())
        },
    )
    .await;
    finish(&sim, &site, id).await;

    let after = helpers::eventually("the jobs' timings are recorded", || async {
        let text = get(addr, "/metrics").await.1;
        TIMINGS
            .iter()
            .all(|t| sample(&text, &format!("{t}_count"), &SET).is_some_and(|n| n >= 1.0))
            .then_some(text)
    })
    .await;
    for timing in TIMINGS {
        assert!(
            must(&after, &format!("{timing}_count"), &SET) >= 1.0,
            "{timing} moved"
        );
        assert!(
            must(&after, &format!("{timing}_bucket"), &with(("le", "+Inf"))) >= 1.0,
            "{timing}'s buckets moved"
        );
    }
    assert!(must(&after, "scaleset_jobs_seen_total", &[("kind", "completed")]) >= 2.0);
    assert!(
        must(
            &after,
            "scaleset_provider_calls_total",
            &[("provider", "fake"), ("command", "create")]
        ) >= 2.0
    );
    assert!(
        must(
            &after,
            "scaleset_provider_call_duration_seconds_count",
            &[("provider", "fake"), ("command", "create")]
        ) >= 2.0
    );
    assert_eq!(
        must(
            &after,
            "scaleset_provider_failures_total",
            &[("provider", "fake"), ("command", "create")]
        ),
        0.0
    );
    assert!(
        must(
            &after,
            "scaleset_github_call_statuses_total",
            &[("endpoint", "generate_jit_config"), ("status", "2xx")]
        ) >= 2.0
    );
    assert!(
        must(
            &after,
            "scaleset_github_calls_total",
            &[("endpoint", "generate_jit_config"), ("class", "ok")]
        ) >= 2.0
    );
    assert_eq!(
        must(&after, "scaleset_leases_held", &[("worker", "worker-a")]),
        1.0
    );
    must(&after, "scaleset_scale_set_jobs_waiting", &SET);
    must(&after, "scaleset_scale_set_desired_runners", &SET);
    must(&after, "scaleset_scale_set_last_message_age_seconds", &SET);
    assert_eq!(must(&after, "scaleset_scale_sets_exported", &[]), 1.0);
    // The names the dashboards already use are still there.
    for name in [
        "scaleset_scale_sets",
        "scaleset_runners",
        "scaleset_scale_sets_needing_attention",
        "scaleset_message_lag_seconds_count",
    ] {
        assert!(
            after.lines().any(|l| l.starts_with(name)),
            "{name} is still exported"
        );
    }
    // No runner or job ids as labels.
    let allowed: BTreeSet<String> = [
        "state",
        "status",
        "kind",
        "endpoint",
        "class",
        "scale_set",
        "entity_kind",
        "entity_name",
        "provider",
        "command",
        "worker",
        "le",
        "method",
        "route",
        "version",
        "revision",
        "rustc",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let used = label_names(&after);
    assert!(
        used.is_subset(&allowed),
        "only the documented labels: {:?}",
        used.difference(&allowed).collect::<Vec<_>>()
    );
}
