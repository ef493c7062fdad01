//! `fleet scale WORKERS SETS [transport]` (issue 53 item 2): SETS scale sets across WORKERS
//! worker processes on one PostgreSQL database, the simulator in its own process.
//!
//! Each worker is this example run again as `fleet --scale-worker NAME URL TRANSPORT`: one
//! `Controller` with default production settings and its own store pool, the fake provider, and
//! the benchmark's controller identity (so a second fleet adopts what the first created). It
//! stops cleanly when its stdin closes. The parent, measuring from outside:
//!
//! 1. records SETS scale sets in a fresh `scaleset_test_<uuid>` database
//!    (`SCALESET_TEST_DATABASE_URL` names the server) and starts the workers: the time until
//!    the simulator holds SETS long-polls, and how the leases are spread once they settle;
//! 2. after `SCALESET_BENCH_SETTLE` (20 s), an idle window of `SCALESET_BENCH_WINDOW` (60 s):
//!    each worker's RSS and CPU, the simulator's CPU, and PostgreSQL's (every `postgres`
//!    process's CPU time, so the server's and the workers' backends);
//! 3. kills one worker (SIGKILL): the time until every set polls again and none of its leases
//!    is left with it;
//! 4. stops the workers, wipes the database (a new, empty one with the same declared fleet)
//!    and starts them again: the time until every set polls, and the simulator's
//!    `create_scale_set` count (zero when every set was adopted).
//!
//! `SCALESET_BENCH_WATCH_SECS` sets the workers' watch interval, `SCALESET_BENCH_LEASE_TTL_SECS`
//! their lease TTL (renewals every TTL / 3: fewer writes, a slower takeover);
//! `SCALESET_BENCH_IDLE_ONLY=1` stops after the idle window.
//!
//! Kept apart from `fleet.rs`, as `workers.rs` is.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use prometheus_client::registry::Registry;
use scaleset_control::{Controller, ControllerIdentity, Settings, StoreClientFactory};
use scaleset_store::test_util::PgDatabase;
use scaleset_store::{
    DatabaseUrl, DieselStore, LeaseStore as _, NewScaleSet, ScaleSetStore as _, Store,
};
use uuid::Uuid;

use super::rss::rss_kib;
use super::{
    CONTROLLER, Sim, Transport, cpu_ticks, fake_provider, load_average, record_entity,
    store_options,
};

/// The variable that names the PostgreSQL server (the tests' variable).
const PG_VAR: &str = "SCALESET_TEST_DATABASE_URL";
/// How many tasks record the scale sets (the store's pool is 8 connections).
const POPULATE_TASKS: usize = 8;

/// Parses `WORKERS SETS [transport]` (the words after `scale`) and runs the mode.
pub(crate) fn main(args: &[String], runtime: &tokio::runtime::Runtime) -> Result<()> {
    let usage = "usage: fleet scale WORKERS SETS [transport]";
    let number = |i: usize, default: usize| -> Result<usize> {
        args.get(i)
            .map_or(Ok(default), |a| a.parse())
            .with_context(|| format!("argument {} of `scale` is a number; {usage}", i + 1))
    };
    let (workers, sets) = (number(0, 8)?, number(1, 100_000)?);
    let transport = Transport::parse(args.get(2).or(Some(&"https2".to_owned())))?;
    if workers < 2 || sets == 0 {
        bail!("{usage} (WORKERS at least 2, so one can be killed; SETS above 0)");
    }
    let admin = std::env::var(PG_VAR).with_context(|| {
        format!(
            "{PG_VAR} names the PostgreSQL server (e.g. postgres://postgres@127.0.0.1:5432/test)"
        )
    })?;
    runtime.block_on(run(workers, sets, transport, admin))
}

/// `fleet --scale-worker NAME URL TRANSPORT`: one worker of the `scale` mode, until its stdin
/// closes.
pub(crate) fn worker_child(args: &[String], runtime: &tokio::runtime::Runtime) -> Result<()> {
    let [name, url, transport] = args else {
        bail!("usage: fleet --scale-worker NAME URL TRANSPORT (started by `fleet scale`)");
    };
    let transport = Transport::parse(Some(transport))?;
    runtime.block_on(async {
        let store = Arc::new(DieselStore::open(store_options(DatabaseUrl::parse(url)?)?).await?);
        let store: Arc<dyn Store> = store;
        let clients = StoreClientFactory::new(store.clone()).with_config(move |config| {
            if transport == Transport::H2c {
                config.with_http2(scaleset_github::Http2Config::default().with_prior_knowledge())
            } else {
                config
            }
        });
        let mut settings = Settings {
            worker: name.clone(),
            ..Settings::default()
        };
        // `SCALESET_BENCH_WATCH_SECS`: the supervisor's watch interval (10 s by default), to
        // show what the watch's read of every scale set costs the database.
        if let Some(secs) = std::env::var("SCALESET_BENCH_WATCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
        {
            settings.watch_interval = Duration::from_secs(secs);
        }
        settings.lease_ttl = lease_ttl();
        let mut registry = Registry::default();
        let controller = Controller::new(
            store,
            Arc::new(clients),
            BTreeMap::from([("fake".to_owned(), fake_provider())]),
            ControllerIdentity::new(Uuid::from_u128(CONTROLLER)),
            settings,
            &mut registry,
        );
        let cancel = tokio_util::sync::CancellationToken::new();
        let stop = cancel.clone();
        // A thread: the workspace's tokio has no `io-std`.
        // `SCALESET_BENCH_EXIT_IDLE=1`: exit in place instead, so that under heaptrack what
        // is "leaked" is exactly what the idle worker holds.
        let exit_in_place = std::env::var_os("SCALESET_BENCH_EXIT_IDLE").is_some();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                if line.is_err() {
                    break;
                }
            }
            if exit_in_place {
                std::process::exit(0);
            }
            stop.cancel();
        });
        controller.run(cancel).await?;
        Ok(())
    })
}

/// One worker process.
struct Worker {
    name: String,
    child: tokio::process::Child,
    pid: u32,
}

/// Starts `count` workers on the database at `url`, their stderr in `logs`.
fn start_workers(
    count: usize,
    url: &str,
    transport: Transport,
    logs: &std::path::Path,
) -> Result<Vec<Worker>> {
    let transport = match transport {
        Transport::Http1 => "http1",
        Transport::H2c => "h2c",
        Transport::Https1 => "https1",
        Transport::Https2 => "https2",
    };
    let mut workers = Vec::new();
    for i in 0..count {
        let name = format!("scale-worker-{i}");
        let stderr = std::fs::File::create(logs.join(format!("{name}.stderr")))?;
        // `SCALESET_BENCH_HEAPTRACK=DIR`: the first worker runs under heaptrack, its profile
        // written to DIR (its RSS below is then heaptrack's script's, not the worker's).
        let heaptrack = std::env::var_os("SCALESET_BENCH_HEAPTRACK").filter(|_| i == 0);
        let mut command = match &heaptrack {
            Some(dir) => {
                let mut command = tokio::process::Command::new("heaptrack");
                command
                    .arg("-o")
                    .arg(std::path::Path::new(dir).join(&name))
                    .arg(std::env::current_exe()?);
                command
            }
            None => tokio::process::Command::new(std::env::current_exe()?),
        };
        let child = command
            .args(["--scale-worker", &name, url, transport])
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        let pid = child.id().context("a worker has no pid")?;
        // The stdin stays open in the child until `stop_workers` drops it.
        let _ = child.stdin.as_ref().context("a worker has no stdin")?;
        workers.push(Worker { name, child, pid });
    }
    Ok(workers)
}

/// Stops every worker cleanly (its stdin closed: it deletes its sessions and exits), killing
/// what has not exited 60 s after all were told. All are told first: told one after the
/// other, eight workers of 12,500 sets each took over four minutes to stop.
async fn stop_workers(mut workers: Vec<Worker>) -> Result<()> {
    for worker in &mut workers {
        drop(worker.child.stdin.take());
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for mut worker in workers {
        match tokio::time::timeout_at(deadline, worker.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    eprintln!("{} exited with {status}", worker.name);
                }
            }
            Err(_) => {
                eprintln!("{} did not stop within 60 s: killed", worker.name);
                worker.child.kill().await?;
            }
        }
    }
    Ok(())
}

/// Fails when a worker has exited.
fn all_alive(workers: &mut [Worker], logs: &std::path::Path) -> Result<()> {
    for worker in workers {
        if let Some(status) = worker.child.try_wait()? {
            bail!(
                "{} exited early ({status}); its stderr is {}",
                worker.name,
                logs.join(format!("{}.stderr", worker.name)).display()
            );
        }
    }
    Ok(())
}

/// Records the simulator's credentials, organization `acme` and `sets` scale sets
/// `bench-000000`… in the database at `url`, `POPULATE_TASKS` at a time.
async fn populate(url: &DatabaseUrl, sim: &Sim, sets: usize) -> Result<Arc<DieselStore>> {
    let store = Arc::new(DieselStore::open(store_options(url.clone())?).await?);
    let entity = record_entity(&store, sim).await?;
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..POPULATE_TASKS {
        let store = store.clone();
        tasks.spawn(async move {
            for i in (task..sets).step_by(POPULATE_TASKS) {
                store
                    .create_scale_set(NewScaleSet {
                        entity_id: entity.id,
                        spec: scaleset_store::test_util::spec(&format!("bench-{i:06}"))
                            .edit(|r| r.max_runners = Some(10))
                            .expect("a valid test spec"),
                    })
                    .await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(store)
}

/// Waits until the simulator holds `sets` long-polls; the time since `t0`.
async fn until_polling(
    sim: &mut Sim,
    workers: &mut [Worker],
    logs: &std::path::Path,
    sets: usize,
    t0: Instant,
) -> Result<Duration> {
    let limit = Duration::from_secs(3600);
    let mut last_report = Instant::now();
    loop {
        let polls = sim.polls().await?;
        if all_but_in_flight(polls, sets) {
            eprintln!("  … {:.1?}: {polls} of {sets} polls held", t0.elapsed());
            return Ok(t0.elapsed());
        }
        all_alive(workers, logs)?;
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!(
                "  … {:.0?}: {polls} of {sets} polls held (load {})",
                t0.elapsed(),
                load_average()
            );
            last_report = Instant::now();
        }
        if t0.elapsed() > limit {
            bail!("after {limit:?} only {polls} of {sets} polls are held");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether `polls` long-polls held at one instant mean every one of `sets` is polling. A
/// served set's poll returns every 50 s and is sent again at once, so with every set polling
/// a count taken at one instant still misses those between the two: after a takeover, when the
/// re-opens are spread over the 50 s, 100,000 sets stayed under 100,000 for ten minutes after
/// every stale session had been replaced. One in a thousand is allowed for them (none below
/// 1,000 sets).
fn all_but_in_flight(polls: usize, sets: usize) -> bool {
    polls + sets / 1000 >= sets
}

/// The live leases per holder.
async fn shares(store: &DieselStore) -> Result<BTreeMap<String, usize>> {
    let mut shares = BTreeMap::new();
    for lease in store.live_leases().await? {
        *shares.entry(lease.holder).or_default() += 1;
    }
    Ok(shares)
}

/// User plus system CPU ticks of every process named `postgres` (the server and its backends).
fn postgres_ticks() -> Result<u64> {
    let mut ticks = 0;
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "postgres" {
            // A backend that ended between the listing and the read counts nothing.
            ticks += cpu_ticks(pid).unwrap_or(0);
        }
    }
    Ok(ticks)
}

/// Seconds from an environment variable, or `default`.
/// The workers' lease TTL: `SCALESET_BENCH_LEASE_TTL_SECS`, else the default setting's.
fn lease_ttl() -> Duration {
    secs_from_env(
        "SCALESET_BENCH_LEASE_TTL_SECS",
        Settings::default().lease_ttl.as_secs(),
    )
}

fn secs_from_env(name: &str, default: u64) -> Duration {
    Duration::from_secs(
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
    )
}

async fn run(count: usize, sets: usize, transport: Transport, admin: String) -> Result<()> {
    let mut sim = Sim::start(transport).await?;
    let logs = tempfile::tempdir()?;
    let logs_path = logs.path().to_owned();
    let (settle, window) = (
        secs_from_env("SCALESET_BENCH_SETTLE", 20),
        secs_from_env("SCALESET_BENCH_WINDOW", 60),
    );
    let ttl = lease_ttl();
    let watch = std::env::var("SCALESET_BENCH_WATCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Settings::default().watch_interval, Duration::from_secs);
    println!(
        "scale: {sets} scale sets across {count} worker processes on one PostgreSQL database, \
         transport {transport:?}, lease TTL {ttl:?}, watch interval {watch:?}; worker logs in {}",
        logs_path.display()
    );
    let admin_for_create = admin.clone();
    let database =
        tokio::task::spawn_blocking(move || PgDatabase::create(PG_VAR, &admin_for_create)).await?;
    let url = DatabaseUrl::parse(&database.url)?;
    let t0 = Instant::now();
    let store = populate(&url, &sim, sets).await?;
    println!("{sets} scale sets recorded in {:.1?}", t0.elapsed());

    // 1. From an empty database (the sets declared, nothing on GitHub) to all listening.
    let load_before = load_average();
    let t0 = Instant::now();
    let mut workers = start_workers(count, &database.url, transport, &logs_path)?;
    let listening = until_polling(&mut sim, &mut workers, &logs_path, sets, t0).await?;
    println!(
        "all {sets} listening after {listening:.1?} (load before {load_before}, now {})",
        load_average()
    );
    let fair = sets.div_ceil(count);
    let spread = loop {
        let shares = shares(&store).await?;
        let held: usize = shares.values().sum();
        let (low, high) = (
            shares.values().copied().min().unwrap_or(0),
            shares.values().copied().max().unwrap_or(0),
        );
        let within = shares.len() == count
            && high as f64 <= fair as f64 * 1.05
            && low as f64 >= fair as f64 * 0.95;
        if (within && held == sets && all_but_in_flight(sim.polls().await?, sets))
            || t0.elapsed() > listening + Duration::from_secs(600)
        {
            break (shares, t0.elapsed(), within);
        }
        all_alive(&mut workers, &logs_path)?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    println!(
        "leases per worker after {:.1?} ({} each ± 5 %: {}): {:?}",
        spread.1,
        fair,
        if spread.2 { "yes" } else { "NO" },
        spread.0
    );
    sim.ask("clear").await?;

    // 2. The steady idle state.
    tokio::time::sleep(settle).await;
    all_alive(&mut workers, &logs_path)?;
    let load_before = load_average();
    let cpu0: Vec<u64> = workers
        .iter()
        .map(|w| cpu_ticks(w.pid))
        .collect::<Result<_>>()?;
    let (sim0, pg0, at) = (sim.cpu().await?, postgres_ticks()?, Instant::now());
    tokio::time::sleep(window).await;
    all_alive(&mut workers, &logs_path)?;
    let seconds = at.elapsed().as_secs_f64();
    let percent = |ticks: u64| ticks as f64 / seconds;
    let (sim1, pg1) = (sim.cpu().await?, postgres_ticks()?);
    println!(
        "idle window of {window:?} after {settle:?} settling (load before {load_before}, after {}):",
        load_average()
    );
    let mut rss_total = 0;
    for (worker, before) in workers.iter().zip(cpu0) {
        let rss = rss_kib(worker.pid)?;
        rss_total += rss;
        let sets_held = shares(&store)
            .await?
            .get(&worker.name)
            .copied()
            .unwrap_or(0);
        println!(
            "  {}: {sets_held} sets, RSS {:.1} MiB, CPU {:.2} % of a core",
            worker.name,
            rss as f64 / 1024.0,
            percent(cpu_ticks(worker.pid)?.saturating_sub(before))
        );
    }
    println!(
        "  all workers: RSS {:.1} MiB ({:.1} KiB a set); simulator CPU {:.2} %; PostgreSQL CPU \
         {:.2} % of a core",
        rss_total as f64 / 1024.0,
        rss_total as f64 / sets as f64,
        percent(sim1.saturating_sub(sim0)),
        percent(pg1.saturating_sub(pg0))
    );
    let idle_counts = sim.counts().await?;
    println!(
        "  GitHub calls in the window and settling: {:?}",
        idle_counts
    );

    if std::env::var_os("SCALESET_BENCH_IDLE_ONLY").is_some() {
        stop_workers(workers).await?;
        drop(store);
        tokio::task::spawn_blocking(move || drop(database)).await?;
        return Ok(());
    }

    // 3. One worker killed.
    let mut killed = workers.remove(0);
    let orphaned = shares(&store)
        .await?
        .get(&killed.name)
        .copied()
        .unwrap_or(0);
    let t0 = Instant::now();
    killed.child.start_kill()?;
    let _ = killed.child.wait().await?;
    // The leases alone are taken over once the dead worker's expire (within the TTL of its
    // last renewal); the sets are heard again once each stale session is replaced too.
    let mut leases_taken = None;
    let (taken_over, polls_then) = loop {
        let shares = shares(&store).await?;
        let left = shares.get(&killed.name).copied().unwrap_or(0);
        let held: usize = shares.values().sum();
        if left == 0 && held == sets && leases_taken.is_none() {
            leases_taken = Some(t0.elapsed());
            println!(
                "{} killed holding {orphaned} sets: every lease held by another worker after \
                 {:.1?} (lease TTL {ttl:?})",
                killed.name,
                t0.elapsed()
            );
        }
        let polls = sim.polls().await?;
        if leases_taken.is_some() && all_but_in_flight(polls, sets) {
            break (t0.elapsed(), polls);
        }
        all_alive(&mut workers, &logs_path)?;
        if t0.elapsed() > ttl * 5 {
            bail!(
                "{left} leases still with the killed worker, {held} of {sets} held, after {:.0?}",
                t0.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    println!(
        "{} killed holding {orphaned} sets: all taken over and polling after {taken_over:.1?} \
         ({polls_then} long-polls held then; lease TTL {ttl:?}); leases now {:?}",
        killed.name,
        shares(&store).await?
    );

    // 4. The database lost: stop, a new empty database with the same fleet, start again.
    stop_workers(workers).await?;
    drop(store);
    tokio::task::spawn_blocking(move || drop(database)).await?;
    sim.ask("clear").await?;
    let admin_for_create = admin.clone();
    let database =
        tokio::task::spawn_blocking(move || PgDatabase::create(PG_VAR, &admin_for_create)).await?;
    let url = DatabaseUrl::parse(&database.url)?;
    let store = populate(&url, &sim, sets).await?;
    let load_before = load_average();
    let t0 = Instant::now();
    let mut workers = start_workers(count, &database.url, transport, &logs_path)?;
    let listening = until_polling(&mut sim, &mut workers, &logs_path, sets, t0).await?;
    let counts = sim.counts().await?;
    println!(
        "after the wipe: all {sets} listening after {listening:.1?} (load before {load_before}, \
         now {}); create_scale_set {} (0: every set adopted), list_scale_sets {}, \
         get_scale_set {}",
        load_average(),
        counts.get("create_scale_set").copied().unwrap_or(0),
        counts.get("list_scale_sets").copied().unwrap_or(0),
        counts.get("get_scale_set").copied().unwrap_or(0),
    );
    let by_holder: HashMap<String, usize> = shares(&store).await?.into_iter().collect();
    println!("leases per worker after the wipe: {by_holder:?}");
    stop_workers(workers).await?;
    drop(store);
    tokio::task::spawn_blocking(move || drop(database)).await?;
    Ok(())
}
