//! Issue 50 item 1: three workers on one PostgreSQL database, scraped as a ServiceMonitor
//! scrapes them. A sum over every worker's `/metrics` is the truth the store holds: the
//! fleet-wide gauges come from the leading worker only, a scale set's series from its lease
//! holder only (the leader for a set nobody holds), and each worker's `leases_held` is its own.

use std::collections::{BTreeMap, HashMap};

use scaleset_store::test_util::test_key;
use scaleset_store::{
    DieselStore, InstanceStatus, InstanceStore as _, Keyring, LeaseStore as _, ScaleSetState,
    ScaleSetStore as _, StoreOptions,
};

use crate::helpers::{self, Worker, eventually, get, worker_env_with};

/// One sample of a scrape: the metric name, its labels, its value.
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The samples of an OpenMetrics text (our label values hold no `,` or `"` escapes).
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter_map(|pair| {
                    let (key, value) = pair.split_once('=')?;
                    Some((key.to_owned(), value.trim_matches('"').to_owned()))
                })
                .collect();
            Some(Sample {
                name: name.to_owned(),
                labels,
                value: value.parse().ok()?,
            })
        })
        .collect()
}

/// The sum over `scrapes` of the samples named `name` whose labels include `with`.
fn sum(scrapes: &[Vec<Sample>], name: &str, with: &[(&str, &str)]) -> f64 {
    scrapes
        .iter()
        .flatten()
        .filter(|s| s.name == name)
        .filter(|s| {
            with.iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

/// How many of `scrapes` have a sample named `name`.
fn exporters(scrapes: &[Vec<Sample>], name: &str) -> usize {
    scrapes
        .iter()
        .filter(|scrape| scrape.iter().any(|s| s.name == name))
        .count()
}

/// Notes in `wrong` when the workers' sum `got` is not the store's `truth`.
fn check(wrong: &mut Vec<String>, what: String, got: f64, truth: usize) {
    #[allow(clippy::cast_precision_loss)]
    let truth = truth as f64;
    if (got - truth).abs() > f64::EPSILON {
        wrong.push(format!(
            "{what}: the workers sum to {got}, the store says {truth}"
        ));
    }
}

fn env_named(name: &str) -> Vec<(&'static str, String)> {
    worker_env_with(&[("SCALESET_WORKER__NAME", name)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_sum_over_three_workers_metrics_is_the_fleets_truth() {
    let names = ["s1", "s2", "s3", "s4", "s5"];
    let Some((db, sim, site)) =
        helpers::postgres_site("the scale-out metrics PostgreSQL test", &names).await
    else {
        return;
    };
    // s5 is disabled: nobody holds its lease, and its series still appear once.
    let text = std::fs::read_to_string(site.config()).expect("config");
    let text = text.replacen("name = \"s5\"\n", "name = \"s5\"\nenabled = false\n", 1);
    std::fs::write(site.config(), text).expect("config");

    // One after the other, as a rollout starts them: the first migrates the fresh database.
    let a = Worker::spawn(&site.config(), &env_named("worker-a"));
    a.listen().await;
    let b = Worker::spawn(&site.config(), &env_named("worker-b"));
    b.listen().await;
    let workers = [a, b, Worker::spawn(&site.config(), &env_named("worker-c"))];
    let served = ["s1", "s2", "s3", "s4"];
    let ids = eventually("the four enabled scale sets listen", || async {
        let ids: Vec<i64> = served.iter().filter_map(|n| sim.scale_set_id(n)).collect();
        (ids.len() == served.len() && ids.iter().all(|id| sim.has_session(*id))).then_some(ids)
    })
    .await;
    // Jobs flowing: runners busy on two scale sets while the metrics are read.
    sim.enqueue(ids[0], 2);
    sim.enqueue(ids[1], 1);
    sim.all_running("two jobs run on s1", ids[0], 2).await;
    sim.all_running("a job runs on s2", ids[1], 1).await;

    let store = DieselStore::open(StoreOptions::new(
        scaleset_store::DatabaseUrl::parse(&db.url).expect("the test database URL"),
        Keyring::new(test_key("k1", 1)),
    ))
    .await
    .expect("open the store");
    let mut addrs = Vec::new();
    for worker in &workers {
        addrs.push(worker.listen().await);
    }
    // Eventually: each worker reads the store once a watch interval, so a read between two
    // ticks may lag; once the leases settle every sum equals the store's count.
    let mismatches = || async {
        let sets = store.list_scale_sets(None).await.expect("scale sets");
        let instances = store
            .count_instances_by_scale_set()
            .await
            .expect("instances");
        let leases = store.live_leases().await.expect("leases");
        let mut scrapes = Vec::new();
        for addr in &addrs {
            let (status, text) = get(*addr, "/metrics").await;
            assert_eq!(status, 200, "{text}");
            scrapes.push(samples(&text));
        }
        let mut wrong = Vec::new();
        for state in ScaleSetState::ALL {
            let truth = sets.iter().filter(|s| s.state == *state).count();
            let got = sum(
                &scrapes,
                "scaleset_scale_sets",
                &[("state", state.as_str())],
            );
            check(
                &mut wrong,
                format!("scale sets {}", state.as_str()),
                got,
                truth,
            );
        }
        for status in InstanceStatus::ALL {
            let truth: u64 = instances
                .iter()
                .filter(|(_, s, _)| s == status)
                .map(|(_, _, n)| n)
                .sum();
            let got = sum(&scrapes, "scaleset_runners", &[("status", status.as_str())]);
            check(
                &mut wrong,
                format!("runners {}", status.as_str()),
                got,
                truth as usize,
            );
        }
        for set in &sets {
            let name = set.spec.name().as_str();
            for state in ScaleSetState::ALL {
                let got = sum(
                    &scrapes,
                    "scaleset_scale_set_state",
                    &[("scale_set", name), ("state", state.as_str())],
                );
                check(
                    &mut wrong,
                    format!("{name} in state {}", state.as_str()),
                    got,
                    usize::from(set.state == *state),
                );
            }
            let by_status: HashMap<InstanceStatus, u64> = instances
                .iter()
                .filter(|(id, _, _)| *id == set.id)
                .map(|(_, s, n)| (*s, *n))
                .collect();
            for status in InstanceStatus::ALL {
                let got = sum(
                    &scrapes,
                    "scaleset_scale_set_runners",
                    &[("scale_set", name), ("status", status.as_str())],
                );
                let truth = by_status.get(status).copied().unwrap_or(0);
                check(
                    &mut wrong,
                    format!("{name}'s runners {}", status.as_str()),
                    got,
                    truth as usize,
                );
            }
            for (metric, truth) in [
                (
                    "scaleset_scale_set_enabled",
                    usize::from(set.spec.enabled()),
                ),
                (
                    "scaleset_scale_set_max_runners",
                    set.spec.max_runners() as usize,
                ),
                ("scaleset_scale_set_min_idle", set.spec.min_idle() as usize),
                (
                    "scaleset_scale_set_desired_runners",
                    set.desired_runners as usize,
                ),
            ] {
                let got = sum(&scrapes, metric, &[("scale_set", name)]);
                check(&mut wrong, format!("{name}'s {metric}"), got, truth);
            }
            let got = sum(
                &scrapes,
                "scaleset_scale_set_jobs_waiting",
                &[("scale_set", name)],
            );
            check(
                &mut wrong,
                format!("{name}'s jobs waiting"),
                got,
                set.jobs_waiting as usize,
            );
        }
        for (worker, scrape) in ["worker-a", "worker-b", "worker-c"].iter().zip(&scrapes) {
            let truth = leases.iter().filter(|l| l.holder == *worker).count();
            let own: Vec<&Sample> = scrape
                .iter()
                .filter(|s| s.name == "scaleset_leases_held")
                .collect();
            if own.len() != 1 || own[0].labels.get("worker").map(String::as_str) != Some(worker) {
                wrong.push(format!(
                    "{worker} exports leases_held for others: {}",
                    own.len()
                ));
            }
            check(
                &mut wrong,
                format!("leases held by {worker}"),
                sum(&scrapes, "scaleset_leases_held", &[("worker", worker)]),
                truth,
            );
        }
        // Each process exports its own build facts and process series.
        for per_process in ["scaleset_build_info", "process_start_time_seconds"] {
            let count = exporters(&scrapes, per_process);
            if count != scrapes.len()
                && (per_process.starts_with("scaleset_") || cfg!(target_os = "linux"))
            {
                wrong.push(format!(
                    "{per_process} is exported by {count} workers, not each"
                ));
            }
        }
        for fleet in [
            "scaleset_scale_sets",
            "scaleset_scale_sets_needing_attention",
            "scaleset_runners",
            "scaleset_scale_sets_not_declared",
        ] {
            let count = exporters(&scrapes, fleet);
            if count != 1 {
                wrong.push(format!("{fleet} is exported by {count} workers, not one"));
            }
        }
        wrong
    };
    scaleset_eventually::eventually_seen(
        "the sums over the three workers match the store",
        || async {
            let wrong = mismatches().await;
            if wrong.is_empty() {
                Ok(())
            } else {
                Err(format!("{wrong:#?}"))
            }
        },
    )
    .await;
    drop(workers);
}
