//! The Grafana dashboard (`deploy/grafana/scaleset.json`) against a live worker: every metric a
//! dashboard query names must be in the worker's `/metrics`, so the dashboard cannot drift from
//! the code (a renamed or removed metric fails here, not on an operator's blank panel).

use std::collections::BTreeSet;
use std::path::Path;

use super::{serve_jobs, start_serving};
use crate::helpers::{self, get};

/// The dashboard file, from this crate's directory.
fn dashboard() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/grafana/scaleset.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every `expr` (a PromQL query) anywhere in the dashboard.
fn queries(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("expr", serde_json::Value::String(expr)) => out.push(expr.clone()),
                    _ => queries(value, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| queries(item, out)),
        _ => {}
    }
}

/// The metric names a query names: every identifier starting `scaleset_` (PromQL functions,
/// label names and keywords never do).
fn metric_names(query: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = query.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut i = 0;
    while i < bytes.len() {
        if ident(bytes[i]) && (i == 0 || !ident(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            let word = &query[start..i];
            if word.starts_with("scaleset_") {
                names.insert(word.to_owned());
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The series names an OpenMetrics exposition exports: every sample's name, and the names its
/// `# TYPE` lines promise (a counter's `_total`, a histogram's `_bucket`, `_sum`, `_count`), so
/// a labelled family with no sample yet still counts as exported.
fn exported(exposition: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                "gauge" => &[""],
                _ => &[],
            };
            names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        } else if !line.starts_with('#') && !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_owned());
        }
    }
    names
}

/// The dashboard's metric names that `exposition` does not export.
fn missing(dashboard: &serde_json::Value, exposition: &str) -> BTreeSet<String> {
    let mut all = Vec::new();
    queries(dashboard, &mut all);
    let exported = exported(exposition);
    all.iter()
        .flat_map(|q| metric_names(q))
        .filter(|name| !exported.contains(name))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_dashboard_queries_is_exported_by_a_running_worker() {
    let dashboard = dashboard();
    let mut all = Vec::new();
    queries(&dashboard, &mut all);
    let named: BTreeSet<String> = all.iter().flat_map(|q| metric_names(q)).collect();
    // The panels the issue asks for, by the metrics that feed them.
    for metric in [
        "scaleset_scale_sets",
        "scaleset_jobs_seen_total",
        "scaleset_runners",
        "scaleset_scale_set_jobs_waiting",
        "scaleset_job_queued_to_runner_requested_seconds_bucket",
        "scaleset_runner_requested_to_online_seconds_bucket",
        "scaleset_github_calls_total",
        "scaleset_provider_calls_total",
        "scaleset_provider_failures_total",
        "scaleset_leases_held",
        "scaleset_scale_set_desired_runners",
        "scaleset_scale_set_max_runners",
        "scaleset_scale_set_min_idle",
        "scaleset_scale_set_last_message_age_seconds",
        "scaleset_bootstrap_failures_total",
        "scaleset_bootstrap_deadline_expiries_total",
        "scaleset_api_requests_total",
        "scaleset_build_info",
    ] {
        assert!(
            named.contains(metric),
            "no dashboard query names {metric}: {named:?}"
        );
    }
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels {
        let targets = panel["targets"].as_array().map_or(0, Vec::len);
        assert!(targets > 0, "panel {} has no query", panel["title"]);
    }

    let (sim, site) = helpers::linux_site().await;
    let (worker, id) = start_serving(&sim, &site, "linux").await;
    // Jobs through, so the labelled families have samples, not only their TYPE lines.
    serve_jobs(&sim, &site, id, 2).await;
    let addr = worker.listen().await;
    // A probe answered, so the request counter has a series (a family without one is not
    // exposed at all).
    assert_eq!(get(addr, "/healthz").await.0, 200);
    // The per-set gauges follow the store on the worker's next watch pass (the last message's
    // age among them), so a scrape right after the jobs may come before it.
    // A failed wait names the last scrape's gaps (printed when they change) before timing out.
    let shown = std::sync::Mutex::new(None);
    scaleset_eventually::eventually_within(
        "every metric deploy/grafana/scaleset.json queries is exported by the worker",
        std::time::Duration::from_secs(60),
        || async {
            let (status, metrics) = get(addr, "/metrics").await;
            assert_eq!(status, 200, "{metrics}");
            let missing = missing(&dashboard, &metrics);
            let mut shown = shown.lock().expect("shown");
            if !missing.is_empty() && shown.as_ref() != Some(&missing) {
                eprintln!("not exported yet: {missing:?}\nthe worker's /metrics:\n{metrics}");
                *shown = Some(missing.clone());
            }
            missing.is_empty().then_some(())
        },
    )
    .await;
}

/// The per-scale-set series: every metric whose series carry `scale_set`.
fn per_set_metric(name: &str) -> bool {
    name.starts_with("scaleset_scale_set_")
        || name.starts_with("scaleset_bootstrap_")
        || [
            "scaleset_job_queued_to_runner_requested_seconds",
            "scaleset_runner_requested_to_online_seconds",
            "scaleset_job_assigned_to_started_seconds",
            "scaleset_job_started_to_completed_seconds",
        ]
        .iter()
        .any(|timing| name.starts_with(timing))
}

/// The queries naming a per-set metric that do not select on both variables.
fn unfiltered(dashboard: &serde_json::Value) -> Vec<String> {
    let mut all = Vec::new();
    queries(dashboard, &mut all);
    all.into_iter()
        .filter(|q| metric_names(q).iter().any(|n| per_set_metric(n)))
        .filter(|q| {
            !(q.contains("entity_name=~\"$entity\"") && q.contains("scale_set=~\"$scale_set\""))
        })
        .collect()
}

/// `$entity` lists the `entity_name` values and `$scale_set` the sets of the chosen entities,
/// both with "All" as `.*` (a regex: the per-set queries match with `=~`); every query of a
/// per-set metric selects on both (a new per-set panel without them fails here).
#[test]
fn the_per_scale_set_panels_follow_the_entity_and_scale_set_variables() {
    let dashboard = dashboard();
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("templating.list");
    let variable = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no ${name} variable"))
    };
    let entity = variable("entity");
    assert_eq!(
        entity["definition"],
        "label_values(scaleset_scale_set_state, entity_name)"
    );
    let scale_set = variable("scale_set");
    assert_eq!(
        scale_set["definition"],
        "label_values(scaleset_scale_set_state{entity_name=~\"$entity\"}, scale_set)"
    );
    for v in [entity, scale_set] {
        assert_eq!(v["query"]["query"], v["definition"], "{v}");
        assert_eq!(v["includeAll"], true, "{v}");
        assert_eq!(v["allValue"], ".*", "{v}");
    }
    assert_eq!(unfiltered(&dashboard), Vec::<String>::new());
    // The rule catches a per-set query missing a variable.
    let bare = serde_json::json!({"panels": [{"targets": [
        {"expr": "sum by (scale_set) (scaleset_scale_set_desired_runners{scale_set=~\"$scale_set\"})"},
        {"expr": "sum(rate(scaleset_bootstrap_failures_total[5m]))"},
        {"expr": "sum by (state) (scaleset_scale_sets)"}
    ]}]});
    assert_eq!(unfiltered(&bare).len(), 2);
}

#[test]
fn the_check_finds_a_metric_the_exposition_lacks_and_accepts_the_suffixed_series() {
    let exposition = "# HELP scaleset_jobs_seen Job messages seen.\n\
        # TYPE scaleset_jobs_seen counter\n\
        # TYPE scaleset_message_lag_seconds histogram\n\
        scaleset_message_lag_seconds_bucket{le=\"1.0\"} 0\n\
        # TYPE scaleset_runners gauge\n\
        scaleset_runners{status=\"busy\"} 2\n\
        # EOF\n";
    let dashboard = serde_json::json!({"panels": [
        {"targets": [{"expr": "sum by (kind) (rate(scaleset_jobs_seen_total[5m]))"}]},
        {"targets": [{"expr": "histogram_quantile(0.9, sum by (le) (rate(scaleset_message_lag_seconds_bucket[5m])))"}]},
        {"targets": [{"expr": "sum(scaleset_message_lag_seconds_sum) / sum(scaleset_runners{status=\"busy\"})"}]},
        {"panels": [{"targets": [{"expr": "max(scaleset_leases_held) + scaleset_jobs_seen"}]}]}
    ]});
    let missing = missing(&dashboard, exposition);
    assert_eq!(
        missing.into_iter().collect::<Vec<_>>(),
        ["scaleset_jobs_seen", "scaleset_leases_held"],
        "a nested panel's unknown metric and a counter named without _total are both caught"
    );
}
