//! `fleet workers N SETS JOBS_PER_S SECS [transport]` (issue 35 item 4): job → instance latency
//! with N controllers in this process, each with its own store pool and worker name, on one
//! PostgreSQL database they share (`SCALESET_TEST_DATABASE_URL` names the server; the mode
//! creates its own `scaleset_test_<uuid>` database and drops it at the end). The lease planner
//! splits the SETS scale sets between them; the simulator child enqueues JOBS_PER_S jobs a
//! second round-robin over every set for SECS seconds, and every provider create is timed
//! against its scale set's last message, as in `latency`.
//!
//! Kept apart from `fleet.rs` (its own argument parsing, its own start) so the other modes'
//! changes merge without touching it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use prometheus_client::registry::Registry;
use scaleset_control::{Controller, ControllerIdentity, Settings, StoreClientFactory};
use scaleset_store::test_util::PgDatabase;
use scaleset_store::{DatabaseUrl, DieselStore, LeaseStore as _, Store};
use uuid::Uuid;

use super::{
    CONTROLLER, Running, Sim, Timed, Timings, Transport, fake_provider, load_average, lock,
    populate_at, print_breakdown, reset_breakdown, until_listening,
};

/// The variable that names the PostgreSQL server (the tests' variable).
const PG_VAR: &str = "SCALESET_TEST_DATABASE_URL";

/// Parses `N SETS JOBS_PER_S SECS [transport]` (the words after `workers`) and runs the mode.
pub(crate) fn main(args: &[String], runtime: &tokio::runtime::Runtime) -> Result<()> {
    let number = |i: usize, default: u64| -> Result<u64> {
        args.get(i)
            .map_or(Ok(default), |a| a.parse())
            .with_context(|| format!("argument {} of `workers` is a number", i + 1))
    };
    let (workers, sets, rate, secs) = (
        number(0, 3)?,
        number(1, 3000)?,
        number(2, 300)?,
        number(3, 30)?,
    );
    let transport = Transport::parse(args.get(4))?;
    if workers == 0 || sets == 0 {
        bail!("usage: fleet workers N SETS JOBS_PER_S SECS [transport] (N and SETS above 0)");
    }
    let admin = std::env::var(PG_VAR).with_context(|| {
        format!(
            "{PG_VAR} names the PostgreSQL server (e.g. postgres://postgres@127.0.0.1:5432/test)"
        )
    })?;
    runtime.block_on(run(
        usize::try_from(workers)?,
        usize::try_from(sets)?,
        rate,
        secs,
        transport,
        admin,
    ))
}

/// One controller named `worker` over `store` (as `super::start`, with its own name).
fn start_worker(
    store: Arc<DieselStore>,
    worker: String,
    transport: Transport,
    provider: Arc<dyn scaleset_provider::Provider>,
    timings: Arc<Timings>,
) -> Running {
    let store: Arc<dyn Store> = store;
    let clients = StoreClientFactory::new(store.clone()).with_config(move |config| {
        if transport == Transport::H2c {
            config.with_http2(scaleset_github::Http2Config::default().with_prior_knowledge())
        } else {
            config
        }
    });
    let settings = Settings {
        worker,
        ..Settings::default()
    };
    let mut registry = Registry::default();
    let controller = Controller::new(
        store,
        Arc::new(clients),
        BTreeMap::from([("fake".to_owned(), provider)]),
        ControllerIdentity::new(Uuid::from_u128(CONTROLLER)),
        settings,
        &mut registry,
    )
    .with_checkpoints(timings);
    let cancel = tokio_util::sync::CancellationToken::new();
    let handle = tokio::spawn(controller.run(cancel.clone()));
    Running { cancel, handle }
}

async fn run(
    workers: usize,
    sets: usize,
    rate: u64,
    secs: u64,
    transport: Transport,
    admin: String,
) -> Result<()> {
    let mut sim = Sim::start(transport).await?;
    println!(
        "job to instance, {workers} workers on one PostgreSQL database: {rate} jobs/s over {sets} \
         scale sets for {secs} s, transport {transport:?}"
    );
    let database = tokio::task::spawn_blocking(move || PgDatabase::create(PG_VAR, &admin)).await?;
    let url = DatabaseUrl::parse(&database.url)?;
    let max_runners = u32::try_from(rate * secs).unwrap_or(u32::MAX);
    let t0 = Instant::now();
    let first = populate_at(url.clone(), &sim, sets, max_runners).await?;
    println!("{sets} scale sets recorded in {:.1?}", t0.elapsed());
    let timings = Arc::new(Timings::default());
    // One cloud behind every worker: a worker that takes a lease over finds the instances.
    let provider: Arc<dyn scaleset_provider::Provider> = Arc::new(Timed {
        inner: fake_provider(),
        timings: timings.clone(),
    });
    let mut running = Vec::new();
    let t0 = Instant::now();
    for i in 0..workers {
        let store = if i == 0 {
            first.clone()
        } else {
            Arc::new(DieselStore::open(super::store_options(url.clone())?).await?)
        };
        running.push(start_worker(
            store,
            format!("bench-worker-{i}"),
            transport,
            provider.clone(),
            timings.clone(),
        ));
    }
    let listening = until_listening(&mut sim, &first, sets, t0, Duration::from_secs(1800)).await?;
    println!("all {sets} listening after {listening:.1?}");
    // The shares settle: a worker that started first took more than its share and sheds
    // what the later ones take; measured once every worker holds at most its fair share and
    // every set is listening again.
    let fair = sets.div_ceil(workers);
    let shares = loop {
        let mut shares: HashMap<String, usize> = HashMap::new();
        for lease in first.live_leases().await? {
            *shares.entry(lease.holder).or_default() += 1;
        }
        let held: usize = shares.values().sum();
        let balanced = shares.len() == workers && shares.values().all(|&n| n <= fair);
        if balanced && held == sets && sim.polls().await? >= sets {
            break shares;
        }
        if t0.elapsed() > Duration::from_secs(1800) {
            bail!("the leases did not settle: {shares:?}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let mut shares: Vec<(String, usize)> = shares.into_iter().collect();
    shares.sort();
    println!("leases per worker after {:.1?}: {shares:?}", t0.elapsed());
    lock(&timings.samples).clear();
    reset_breakdown();
    let before = load_average();
    sim.ask(&format!("jobs {rate} {secs}")).await?;
    tokio::time::sleep(Duration::from_secs(secs + 5)).await;
    let after = load_average();
    let mut samples = lock(&timings.samples).clone();
    samples.sort_unstable();
    if samples.is_empty() {
        bail!("no instance was created");
    }
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!("load average before: {before}; after: {after}");
    println!(
        "creates timed: {} of {} jobs; p50 {:.2?}, p90 {:.2?}, p99 {:.2?}, max {:.2?}",
        samples.len(),
        rate * secs,
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0)
    );
    print_breakdown();
    for worker in running {
        worker.stop().await?;
    }
    drop(first);
    tokio::task::spawn_blocking(move || drop(database)).await?;
    Ok(())
}
