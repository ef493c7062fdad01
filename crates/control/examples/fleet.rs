//! Fleet-scale benchmarks of the control loop (issue 18): the real `Controller` over a SQLite
//! store, the real client, and the simulator in a separate process.
//!
//! ```sh
//! ulimit -n 30000
//! # disaster recovery: N scale sets created, the database wiped, one controller started
//! cargo run --release -p scaleset-control --example fleet -- recovery 1000 [http1|h2c|https2]
//! # listener density: N idle scale sets, each holding a long-poll; RSS and idle CPU
//! cargo run --release -p scaleset-control --example fleet -- density 10000 https2
//! # job to instance: JOBS jobs/s spread over SETS scale sets for SECS seconds
//! cargo run --release -p scaleset-control --example fleet -- latency 100 100 30 [http1|h2c|https2]
//! # the same with N workers on one PostgreSQL database (SCALESET_TEST_DATABASE_URL names it)
//! cargo run --release -p scaleset-control --example fleet -- workers 3 3000 300 30 [transport]
//! # clean restart: N scale sets listening, the worker stopped cleanly and started again
//! cargo run --release -p scaleset-control --example fleet -- restart 100 [http1|h2c|https2]
//! # scaleset beside another controller (GARM) on one simulator, each a process tree; without
//! # --vs scaleset's figures alone (needs target/release/scaleset-worker)
//! cargo run --release -p scaleset-control --example fleet -- compare 1000 [--vs 'COMMAND']
//! # SETS scale sets across WORKERS worker processes on one PostgreSQL (issue 53 item 2)
//! cargo run --release -p scaleset-control --example fleet -- scale 8 100000 [transport]
//! # any mode, with a provider whose list by pool key takes SECS (a real cloud's ~1 s)
//! cargo run --release -p scaleset-control --example fleet -- --list-delay 1 recovery 1000
//! # a burst (issue 35): JOBS jobs at once over SETS scale sets, a provider whose create takes 30 s
//! cargo run --release -p scaleset-control --example fleet -- --create-delay 30 burst 100 1000
//! ```
//!
//! `SCALESET_BENCH_SETTLE=SECS` (density) waits that long after all listen before the idle
//! window (20 s by default); 70 puts the window after every set's first empty poll.
//!
//! `--create-delay SECS` (any mode) makes every provider create take that long, as a real
//! cloud's does, with the fake behind the provider's default call limits
//! (`scaleset_provider::CallLimits`), as an external provider is.
//!
//! The program re-executes itself as a child that serves only the simulator (latency 0, long
//! polls held 50 s as github.com does, request log off but counted) and answers commands on
//! stdin (`polls`, `counts`, `clear`, `cpu`, `jobs RATE SECS`). The parent, the process
//! measured, is one worker: a `Controller` with default production settings, the fake provider,
//! and a SQLite store in a temporary directory. Figures and method: `docs/benchmarks.md`.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark waits out its measurement windows by the clock"
)]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use prometheus_client::registry::Registry;
use scaleset_control::{
    Checkpoint, Checkpoints, Controller, ControllerIdentity, Settings, StoreClientFactory,
};
use scaleset_github::Http2Config;
use scaleset_provider::{
    CallLimits, CreateRequest, Error as ProviderError, FakeCloud, InstanceId, Limited, Pool,
    Provider, ProviderInstance,
};
use scaleset_store::{
    Auth, CredentialStore as _, DatabaseUrl, DieselStore, EncryptionKey, Endpoint, EntityKind,
    EntityStore as _, Keyring, NewCredentials, NewEntity, NewScaleSet, ScaleSetState,
    ScaleSetStore as _, SecretString, Store, StoreOptions,
};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use uuid::Uuid;

// Shared with the simulator crate's memory benchmarks, which run a simulator child the same
// way: the same RSS reading and the same TLS arguments after `--serve`.
#[path = "../../sim/examples/support/rss.rs"]
mod rss;
#[path = "../../sim/examples/support/tls_child.rs"]
mod tls_child;

#[path = "fleet_support/workers.rs"]
mod workers;

#[path = "fleet_support/compare.rs"]
mod compare;

#[path = "fleet_support/scale.rs"]
mod scale;

use rss::rss_kib;
use tls_child::SelfSigned;

/// The HTTP/2 stream limit the simulator advertises (as the client-memory example does).
const STREAM_LIMIT: u32 = 100;
/// One controller identity across the wipe, so the second worker adopts what the first created.
const CONTROLLER: u128 = 0x5ca1_e5e7_0000_4000_8000_0000_0000_0018;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Http1,
    H2c,
    Https1,
    Https2,
}

impl Transport {
    fn parse(text: Option<&String>) -> Result<Self> {
        Ok(match text.map_or("http1", String::as_str) {
            "http1" => Self::Http1,
            "h2c" => Self::H2c,
            "https1" => Self::Https1,
            "https2" => Self::Https2,
            other => bail!("the transport is http1, h2c, https1 or https2, not {other:?}"),
        })
    }

    fn tls(self) -> bool {
        matches!(self, Self::Https1 | Self::Https2)
    }
}

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        return serve(&args[2..]);
    }
    if let Some(secs) = take_option(&mut args, "--list-delay")? {
        let _ = LIST_DELAY.set(Duration::from_secs_f64(secs));
    }
    let args = take_create_delay(args)?;
    let number = |i: usize, default: u64| -> Result<u64> {
        args.get(i)
            .map_or(Ok(default), |a| a.parse())
            .with_context(|| format!("argument {i} is a number"))
    };
    let breakdown = std::env::var_os("SCALESET_BENCH_BREAKDOWN").map(|_| {
        let layer = Breakdown::default();
        let stats = layer.stats.clone();
        let _ = STATS.set(stats.clone());
        let filter = tracing_subscriber::filter::Targets::new()
            .with_target("scaleset_store", tracing::Level::DEBUG)
            .with_target("scaleset_github", tracing::Level::DEBUG);
        let subscriber = tracing_subscriber::registry().with(layer.with_filter(filter));
        tracing::subscriber::set_global_default(subscriber).map(|()| stats)
    });
    breakdown.transpose()?;
    // As the binaries build theirs: the blocking pool bounded near the store's 8 connections
    // (`scaleset_app::blocking_threads`), not tokio's 512 threads waiting for one.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(8 + 16)
        .build()?;
    match args.get(1).map(String::as_str) {
        Some("workers") => workers::main(&args[2..], &runtime),
        Some("compare") => compare::main(&args[2..], &runtime),
        Some("compare-worker") => compare::compare_worker(),
        Some("scale") => scale::main(&args[2..], &runtime),
        Some("--scale-worker") => scale::worker_child(&args[2..], &runtime),
        Some("recovery") => {
            let n = number(2, 1000)?;
            runtime.block_on(recovery(n as usize, Transport::parse(args.get(3))?))
        }
        Some("density") => {
            let n = number(2, 10_000)?;
            runtime.block_on(density(n as usize, Transport::parse(args.get(3))?))
        }
        Some("latency") => {
            let (sets, rate, secs) = (number(2, 100)?, number(3, 100)?, number(4, 30)?);
            runtime.block_on(latency(
                sets as usize,
                rate,
                secs,
                Transport::parse(args.get(5))?,
            ))
        }
        Some("restart") => {
            let n = number(2, 100)?;
            runtime.block_on(restart(n as usize, Transport::parse(args.get(3))?))
        }
        Some("burst") => {
            let (sets, jobs) = (number(2, 100)?, number(3, 1000)?);
            runtime.block_on(burst(sets as usize, jobs, Transport::parse(args.get(4))?))
        }
        _ => bail!(
            "usage: fleet [--list-delay SECS] [--create-delay SECS] recovery N [transport] | density N [transport] | latency SETS JOBS_PER_S SECS [transport] | restart N [transport] | burst SETS JOBS [transport] | workers N SETS JOBS_PER_S SECS [transport] | compare N [--vs COMMAND] [--worker PATH] | scale WORKERS SETS [transport]"
        ),
    }
}

type Stats = Arc<Mutex<BTreeMap<String, (u64, Duration)>>>;

static STATS: std::sync::OnceLock<Stats> = std::sync::OnceLock::new();

/// Prints what the breakdown counted since it was last reset (when it is on).
fn print_breakdown() {
    let Some(stats) = STATS.get() else {
        return;
    };
    println!("tracing breakdown (span open to close, since the phase measured began):");
    println!(
        "  {:<40} {:>8} {:>10} {:>10}",
        "span", "count", "mean ms", "total s"
    );
    for (name, (count, total)) in lock(stats).iter() {
        println!(
            "  {name:<40} {count:>8} {:>10.2} {:>10.2}",
            total.as_secs_f64() * 1000.0 / *count as f64,
            total.as_secs_f64()
        );
    }
}

/// Forgets what the breakdown counted so far (the set-up phases).
fn reset_breakdown() {
    if let Some(stats) = STATS.get() {
        lock(stats).clear();
    }
}

/// Counts the store's `store{operation}` and the client's `github.call{endpoint}` spans and
/// sums how long each was open (for the store: waiting for a blocking thread and a pooled
/// connection, then the statement; for the client: one attempt of a call).
#[derive(Default)]
struct Breakdown {
    stats: Stats,
}

struct Opened {
    name: String,
    at: Instant,
}

#[derive(Default)]
struct FieldText(String);

impl tracing::field::Visit for FieldText {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if matches!(field.name(), "operation" | "endpoint") {
            self.0 = value.to_owned();
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if matches!(field.name(), "operation" | "endpoint") {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for Breakdown
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let kind = attrs.metadata().name();
        if kind != "store" && kind != "github.call" {
            return;
        }
        let mut text = FieldText::default();
        attrs.record(&mut text);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Opened {
                name: format!("{kind} {}", text.0),
                at: Instant::now(),
            });
        }
    }

    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && let Some(opened) = span.extensions().get::<Opened>()
        {
            let mut stats = lock(&self.stats);
            let entry = stats.entry(opened.name.clone()).or_default();
            entry.0 += 1;
            entry.1 += opened.at.elapsed();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The child: the simulator alone.

fn serve(args: &[String]) -> Result<()> {
    let mut config = scaleset_sim::SimConfig {
        request_log_capacity: 0,
        http2_max_concurrent_streams: STREAM_LIMIT,
        tls: tls_child::identity(args)?,
        ..scaleset_sim::SimConfig::default()
    };
    // `compare`'s two sides, each in an organization of its own (unused by the other modes).
    config
        .organizations
        .extend([compare::SCALESET_ORG.to_owned(), compare::VS_ORG.to_owned()]);
    let sim = scaleset_sim::Simulator::new(config)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    println!("{}", listener.local_addr()?);
    runtime.spawn({
        let sim = sim.clone();
        async move { sim.serve(listener, std::future::pending()).await }
    });
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["polls"] => sim.waiting_polls().to_string(),
            ["listening", scope] => serde_json::to_string(&sim.listening(scope)?)?,
            ["counts"] => serde_json::to_string(&sim.request_counts())?,
            ["clear"] => {
                sim.clear_requests();
                "ok".to_owned()
            }
            ["cpu"] => cpu_ticks(std::process::id())?.to_string(),
            ["burst", count] => {
                let count: u64 = count.parse()?;
                let ids: Vec<i64> = sim.state().scale_sets.iter().map(|s| s.id).collect();
                for n in 0..count as usize {
                    if let Some(id) = ids.get(n % ids.len().max(1)) {
                        sim.enqueue_jobs(*id, &scaleset_sim::JobSpec::count(1))?;
                    }
                }
                "ok".to_owned()
            }
            ["jobs", rate, secs] => {
                let (rate, secs): (u64, u64) = (rate.parse()?, secs.parse()?);
                runtime.spawn(enqueue(sim.clone(), rate, secs));
                "ok".to_owned()
            }
            _ => format!("unknown command {line:?}"),
        };
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}

/// Enqueues `rate` jobs per second, one at a time round-robin over every scale set.
async fn enqueue(sim: scaleset_sim::Simulator, rate: u64, secs: u64) {
    let ids: Vec<i64> = sim.state().scale_sets.iter().map(|s| s.id).collect();
    if ids.is_empty() || rate == 0 {
        return;
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1) / u32::try_from(rate).unwrap_or(1));
    for n in 0..rate * secs {
        tick.tick().await;
        let id = ids[(n as usize) % ids.len()];
        if let Err(e) = sim.enqueue_jobs(id, &scaleset_sim::JobSpec::count(1)) {
            eprintln!("enqueue failed: {e}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parent: one worker.

/// The simulator child and its command channel.
struct Sim {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    base: String,
    ca: Option<String>,
    _dir: tempfile::TempDir,
}

impl Sim {
    async fn start(transport: Transport) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut command = tokio::process::Command::new(std::env::current_exe()?);
        command.arg("--serve");
        let mut ca = None;
        if transport.tls() {
            let cert = SelfSigned::write(dir.path())?;
            command.args(cert.serve_args(transport != Transport::Https1));
            ca = Some(cert.cert_pem);
        }
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the simulator child")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
        let addr: std::net::SocketAddr = lines
            .next_line()
            .await?
            .context("no address from the child")?
            .parse()?;
        let base = if transport.tls() {
            format!("https://localhost:{}", addr.port())
        } else {
            format!("http://{addr}")
        };
        Ok(Self {
            child,
            stdin,
            lines,
            base,
            ca,
            _dir: dir,
        })
    }

    async fn ask(&mut self, command: &str) -> Result<String> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await?;
        self.stdin.flush().await?;
        self.lines
            .next_line()
            .await?
            .context("the simulator child ended")
    }

    async fn polls(&mut self) -> Result<usize> {
        Ok(self.ask("polls").await?.parse()?)
    }

    async fn counts(&mut self) -> Result<BTreeMap<String, u64>> {
        Ok(serde_json::from_str(&self.ask("counts").await?)?)
    }

    async fn cpu(&mut self) -> Result<u64> {
        Ok(self.ask("cpu").await?.parse()?)
    }

    fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

/// A SQLite store in `dir` holding the simulator's credentials, organization `acme` and `n`
/// scale sets `bench-00000`… (the store harness's spec, at most `max_runners` runners).
async fn populate(
    dir: &std::path::Path,
    file: &str,
    sim: &Sim,
    n: usize,
    max_runners: u32,
) -> Result<Arc<DieselStore>> {
    let url = DatabaseUrl::parse(&format!("sqlite://{}", dir.join(file).display()))?;
    populate_at(url, sim, n, max_runners).await
}

/// The store options every worker of the benchmark opens its store with.
fn store_options(url: DatabaseUrl) -> Result<StoreOptions> {
    let key = EncryptionKey::from_bytes("k1", &[7; 32])?;
    Ok(StoreOptions::new(url, Keyring::new(key)))
}

/// [`populate`] on the database at `url`.
async fn populate_at(
    url: DatabaseUrl,
    sim: &Sim,
    n: usize,
    max_runners: u32,
) -> Result<Arc<DieselStore>> {
    let store = Arc::new(DieselStore::open(store_options(url)?).await?);
    let entity = record_entity(&store, sim).await?;
    // Up to what a spec accepts: `latency` asks for one runner a job (15,000 at 1,000 jobs a
    // second for 15 s), which no set comes near (150 a set over 100 sets).
    let max_runners = max_runners.min(*scaleset_store::spec::MAX_RUNNERS.end());
    for i in 0..n {
        store
            .create_scale_set(NewScaleSet {
                entity_id: entity.id,
                spec: scaleset_store::test_util::spec(&format!("bench-{i:05}"))
                    .edit(|r| r.max_runners = Some(i64::from(max_runners)))
                    .expect("a valid test spec"),
            })
            .await?;
    }
    Ok(store)
}

/// Records the simulator's credentials and organization `acme` in `store`: the entity every
/// benchmark's scale sets belong to.
async fn record_entity(store: &DieselStore, sim: &Sim) -> Result<scaleset_store::Entity> {
    let credentials = store
        .create_credentials(NewCredentials {
            name: "sim".into(),
            endpoint: Endpoint {
                base_url: sim.base.clone(),
                api_base_url: format!("{}/api/v3", sim.base),
                ca_bundle: sim.ca.clone(),
                system_trust: false,
            },
            auth: Auth::Pat {
                token: SecretString::from("ghp_simulator"),
            },
        })
        .await?;
    let entity = store
        .create_entity(NewEntity {
            kind: EntityKind::Organization {
                name: "acme".into(),
            },
            credentials_id: credentials.id,
        })
        .await?;
    Ok(entity)
}

/// A running controller.
struct Running {
    cancel: CancellationToken,
    handle: tokio::task::JoinHandle<Result<(), scaleset_control::Error>>,
}

impl Running {
    async fn stop(self) -> Result<()> {
        self.cancel.cancel();
        self.handle.await??;
        Ok(())
    }
}

fn start(
    store: Arc<DieselStore>,
    transport: Transport,
    provider: Arc<dyn Provider>,
    checkpoints: Option<Arc<dyn Checkpoints>>,
) -> Running {
    let store: Arc<dyn Store> = store;
    let clients = StoreClientFactory::new(store.clone()).with_config(move |config| {
        if transport == Transport::H2c {
            config.with_http2(Http2Config::default().with_prior_knowledge())
        } else {
            config
        }
    });
    let settings = Settings {
        worker: "bench-worker".to_owned(),
        ..Settings::default()
    };
    let mut registry = Registry::default();
    let mut controller = Controller::new(
        store,
        Arc::new(clients),
        BTreeMap::from([("fake".to_owned(), provider)]),
        ControllerIdentity::new(Uuid::from_u128(CONTROLLER)),
        settings,
        &mut registry,
    );
    if let Some(checkpoints) = checkpoints {
        controller = controller.with_checkpoints(checkpoints);
    }
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(controller.run(cancel.clone()));
    Running { cancel, handle }
}

/// How long the fake provider's list by pool key takes (`--list-delay SECS`; none by default).
static LIST_DELAY: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Removes `--NAME VALUE` from `args` and returns the value as a number.
fn take_option(args: &mut Vec<String>, name: &str) -> Result<Option<f64>> {
    let Some(at) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    let value = args
        .get(at + 1)
        .with_context(|| format!("{name} takes a number of seconds"))?
        .parse()
        .with_context(|| format!("{name} takes a number of seconds"))?;
    args.drain(at..at + 2);
    Ok(Some(value))
}

fn fake_provider() -> Arc<dyn Provider> {
    let fake: Arc<dyn Provider> = Arc::new(FakeCloud::new().provider(Uuid::from_u128(CONTROLLER)));
    let fake: Arc<dyn Provider> = match LIST_DELAY.get() {
        Some(delay) if !delay.is_zero() => Arc::new(SlowList {
            inner: fake,
            delay: *delay,
        }),
        _ => fake,
    };
    match CREATE_DELAY.get() {
        Some(delay) => Arc::new(Limited::new(
            SlowCreates {
                inner: fake,
                delay: *delay,
                in_flight: Arc::clone(&IN_FLIGHT),
            },
            CallLimits::default(),
        )),
        None => fake,
    }
}

/// The fake provider whose list by pool key takes `delay` (a cloud API listing by tag).
struct SlowList {
    inner: Arc<dyn Provider>,
    delay: Duration,
}

#[async_trait]
impl Provider for SlowList {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, ProviderError> {
        self.inner.create(request).await
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.delete(pool, instance).await
    }
    async fn get(
        &self,
        pool: &Pool,
        instance: &InstanceId,
    ) -> Result<ProviderInstance, ProviderError> {
        self.inner.get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, ProviderError> {
        tokio::time::sleep(self.delay).await;
        self.inner.list(pool).await
    }
    async fn remove_all(&self) -> Result<(), ProviderError> {
        self.inner.remove_all().await
    }
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.start(pool, instance).await
    }
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.stop(pool, instance).await
    }
    async fn version(&self) -> Result<String, ProviderError> {
        self.inner.version().await
    }
}

/// Waits until the simulator holds `n` long-polls (a listener polls only after its session is
/// open and recorded), then checks the store shows `n` ready scale sets. Returns the time from
/// `t0` until the polls were held.
async fn until_listening(
    sim: &mut Sim,
    store: &DieselStore,
    n: usize,
    t0: Instant,
    limit: Duration,
) -> Result<Duration> {
    let mut last_report = Instant::now();
    let held = loop {
        let polls = sim.polls().await?;
        if polls >= n {
            break t0.elapsed();
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!("  … {:.0?}: {polls} of {n} polls held", t0.elapsed());
            last_report = Instant::now();
        }
        if t0.elapsed() > limit {
            bail!("after {limit:?} only {polls} of {n} polls are held");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let sets = store.list_scale_sets(None).await?;
    let ready = sets
        .iter()
        .filter(|s| s.state == ScaleSetState::Ready)
        .count();
    if ready < n {
        bail!("{n} polls are held but only {ready} scale sets are ready in the store");
    }
    Ok(held)
}

fn print_counts(label: &str, counts: &BTreeMap<String, u64>) {
    println!("{label}:");
    for (endpoint, count) in counts {
        println!("  {endpoint:<22} {count}");
    }
}

async fn recovery(n: usize, transport: Transport) -> Result<()> {
    let mut sim = Sim::start(transport).await?;
    let dir = tempfile::tempdir()?;
    println!(
        "disaster recovery: {n} scale sets, transport {transport:?}, list delay {:?}",
        LIST_DELAY.get().copied().unwrap_or_default()
    );

    let first = populate(dir.path(), "first.db", &sim, n, 10).await?;
    let t0 = Instant::now();
    let running = start(first.clone(), transport, fake_provider(), None);
    let listening = until_listening(&mut sim, &first, n, t0, Duration::from_secs(1800)).await?;
    println!("first start (creates every scale set): all listening after {listening:.2?}");
    running.stop().await?;
    sim.ask("clear").await?;

    // The database is lost: a new, empty one with the same declared fleet.
    let second = populate(dir.path(), "second.db", &sim, n, 10).await?;
    reset_breakdown();
    let (cpu_before, sim_cpu_before) = (cpu_ticks(std::process::id())?, sim.cpu().await?);
    callgrind("--zero")?;
    let t0 = Instant::now();
    let running = start(second.clone(), transport, fake_provider(), None);
    let listening = until_listening(&mut sim, &second, n, t0, Duration::from_secs(1800)).await?;
    callgrind("--dump=recovery")?;
    let wall = t0.elapsed();
    let cpu = cpu_ticks(std::process::id())? - cpu_before;
    let sim_cpu = sim.cpu().await? - sim_cpu_before;
    println!("after the wipe: every listener holding a long-poll after {listening:.2?}");
    println!(
        "worker CPU {:.2} s ({:.0} % of the wall time on {} cores), simulator CPU {:.2} s",
        cpu as f64 / 100.0,
        cpu as f64 / wall.as_secs_f64(),
        std::thread::available_parallelism().map_or(1, usize::from),
        sim_cpu as f64 / 100.0
    );
    println!("worker RSS {} KiB", rss_kib(std::process::id())?);
    print_counts("calls during recovery", &sim.counts().await?);
    print_breakdown();
    // What the worker keeps once the recovery is over (issue 53 item 1: back under the idle
    // bound within a minute?), every 10 s for `SCALESET_BENCH_AFTER` seconds (60 by default).
    let after = std::env::var("SCALESET_BENCH_AFTER")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60u64);
    for _ in 0..after / 10 {
        tokio::time::sleep(Duration::from_secs(10)).await;
        println!(
            "  {:.0?} after all listened: worker RSS {:.1} MiB",
            t0.elapsed().saturating_sub(listening),
            rss_kib(std::process::id())? as f64 / 1024.0
        );
    }
    running.stop().await?;
    Ok(())
}

/// Under `valgrind --tool=callgrind` with `SCALESET_BENCH_CALLGRIND=1`: zeroes or dumps this
/// process's counters (`callgrind_control ARG PID`), so a profile holds the worker's
/// instructions from its start to all listening only, not the populating before it.
fn callgrind(arg: &str) -> Result<()> {
    if std::env::var_os("SCALESET_BENCH_CALLGRIND").is_none() {
        return Ok(());
    }
    let status = std::process::Command::new("callgrind_control")
        .arg(arg)
        .arg(std::process::id().to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .context("running callgrind_control (installed with valgrind)")?;
    if !status.success() {
        bail!("callgrind_control {arg} failed ({status}): is the example running under callgrind?");
    }
    Ok(())
}

/// A clean restart: `n` scale sets listening, the worker stopped cleanly (sessions deleted),
/// and started again on the same database; the time until every set polls again.
async fn restart(n: usize, transport: Transport) -> Result<()> {
    let mut sim = Sim::start(transport).await?;
    let dir = tempfile::tempdir()?;
    println!(
        "clean restart: {n} scale sets, transport {transport:?}, list delay {:?}",
        LIST_DELAY.get().copied().unwrap_or_default()
    );
    let store = populate(dir.path(), "restart.db", &sim, n, 10).await?;
    let t0 = Instant::now();
    let running = start(store.clone(), transport, fake_provider(), None);
    let listening = until_listening(&mut sim, &store, n, t0, Duration::from_secs(1800)).await?;
    println!("first start: all listening after {listening:.2?}");
    running.stop().await?;
    sim.ask("clear").await?;
    let t0 = Instant::now();
    let running = start(store.clone(), transport, fake_provider(), None);
    let listening = until_listening(&mut sim, &store, n, t0, Duration::from_secs(600)).await?;
    println!("after the clean restart: all listening after {listening:.2?}");
    print_counts("calls during the restart", &sim.counts().await?);
    running.stop().await?;
    Ok(())
}

async fn density(n: usize, transport: Transport) -> Result<()> {
    let mut sim = Sim::start(transport).await?;
    let dir = tempfile::tempdir()?;
    println!("listener density: {n} idle scale sets, transport {transport:?}");
    let store = populate(dir.path(), "density.db", &sim, n, 10).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(std::process::id())?;
    let t0 = Instant::now();
    let running = start(store.clone(), transport, fake_provider(), None);
    let listening = until_listening(&mut sim, &store, n, t0, Duration::from_secs(3000)).await?;
    println!("all {n} listening after {listening:.1?}");
    // Settle: the first reconciliation of every set and the start-up allocations are done.
    // `SCALESET_BENCH_SETTLE=SECS` settles longer: past 50 s every set has answered its first
    // empty poll (the held poll's 50 s), so the window sees the steady idle state and not the
    // first pass after the start.
    let settle = std::env::var("SCALESET_BENCH_SETTLE")
        .ok()
        .and_then(|secs| secs.parse().ok())
        .unwrap_or(20);
    tokio::time::sleep(Duration::from_secs(settle)).await;
    let after = rss_kib(std::process::id())?;
    let window = Duration::from_secs(60);
    reset_breakdown();
    let (cpu0, sim0, t) = (
        cpu_ticks(std::process::id())?,
        sim.cpu().await?,
        Instant::now(),
    );
    tokio::time::sleep(window).await;
    let (cpu1, sim1) = (cpu_ticks(std::process::id())?, sim.cpu().await?);
    let secs = t.elapsed().as_secs_f64();
    let end = rss_kib(std::process::id())?;
    let polls = sim.polls().await?;
    println!("worker RSS before the controller: {before} KiB");
    println!(
        "worker RSS with {n} listening:   {after} KiB ({:.1} MiB)",
        after as f64 / 1024.0
    );
    println!("worker RSS after the idle window: {end} KiB");
    println!(
        "per listener: {:.0} bytes ({:.1} KiB)",
        after.saturating_sub(before) as f64 * 1024.0 / n as f64,
        after.saturating_sub(before) as f64 / n as f64
    );
    println!(
        "idle CPU over {secs:.0} s: worker {:.1} % of a core, simulator {:.1} % ({polls} polls held at the end)",
        (cpu1 - cpu0) as f64 / secs,
        (sim1 - sim0) as f64 / secs
    );
    print_counts("calls over the whole run", &sim.counts().await?);
    print_breakdown();
    if let Some(pid) = sim.pid() {
        println!("simulator RSS {} KiB", rss_kib(pid)?);
    }
    if std::env::var_os("SCALESET_BENCH_EXIT_IDLE").is_some() {
        // For a heap profiler (heaptrack's "leaked"): exit with every listener's allocations
        // still live, so what is not freed is what an idle fleet holds.
        drop(sim);
        std::process::exit(0);
    }
    running.stop().await?;
    Ok(())
}

/// Message arrivals per scale set, and the time from the last one to each provider create.
#[derive(Debug, Default)]
struct Timings {
    arrived: Mutex<HashMap<String, Instant>>,
    samples: Mutex<Vec<Duration>>,
}

#[async_trait]
impl Checkpoints for Timings {
    async fn reached(&self, point: Checkpoint, scale_set: &str) {
        if point == Checkpoint::MessageReceived {
            lock(&self.arrived).insert(scale_set.to_owned(), Instant::now());
        }
    }
}

/// The fake provider, timing the start of every create against its scale set's last message.
struct Timed {
    inner: Arc<dyn Provider>,
    timings: Arc<Timings>,
}

#[async_trait]
impl Provider for Timed {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, ProviderError> {
        let now = Instant::now();
        let name = &request.bootstrap.name;
        let scale_set = name.rsplit_once('-').map_or(name.as_str(), |(s, _)| s);
        if let Some(at) = lock(&self.timings.arrived).get(scale_set) {
            lock(&self.timings.samples).push(now.duration_since(*at));
        }
        self.inner.create(request).await
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.delete(pool, instance).await
    }
    async fn get(
        &self,
        pool: &Pool,
        instance: &InstanceId,
    ) -> Result<ProviderInstance, ProviderError> {
        self.inner.get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, ProviderError> {
        self.inner.list(pool).await
    }
    async fn remove_all(&self) -> Result<(), ProviderError> {
        self.inner.remove_all().await
    }
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.start(pool, instance).await
    }
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.stop(pool, instance).await
    }
    async fn version(&self) -> Result<String, ProviderError> {
        self.inner.version().await
    }
}

async fn latency(sets: usize, rate: u64, secs: u64, transport: Transport) -> Result<()> {
    let mut sim = Sim::start(transport).await?;
    let dir = tempfile::tempdir()?;
    println!(
        "job to instance: {rate} jobs/s over {sets} scale sets for {secs} s, transport {transport:?}"
    );
    let max_runners = u32::try_from(rate * secs).unwrap_or(u32::MAX);
    let store = populate(dir.path(), "latency.db", &sim, sets, max_runners).await?;
    let timings = Arc::new(Timings::default());
    let provider: Arc<dyn Provider> = Arc::new(Timed {
        inner: fake_provider(),
        timings: timings.clone(),
    });
    let running = start(store.clone(), transport, provider, Some(timings.clone()));
    until_listening(
        &mut sim,
        &store,
        sets,
        Instant::now(),
        Duration::from_secs(600),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    lock(&timings.samples).clear();
    reset_breakdown();
    let load = load_average();
    // A marker for profilers (`callgrind_control --zero` when it appears).
    println!("jobs start");
    sim.ask(&format!("jobs {rate} {secs}")).await?;
    tokio::time::sleep(Duration::from_secs(secs + 3)).await;
    let load_after = load_average();
    let mut samples = lock(&timings.samples).clone();
    samples.sort_unstable();
    let expected = rate * secs;
    if samples.is_empty() {
        bail!("no instance was created");
    }
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!("load average at the start: {load}; at the end: {load_after}");
    println!(
        "creates timed: {} of {expected} jobs; p50 {:.2?}, p90 {:.2?}, p99 {:.2?}, max {:.2?}",
        samples.len(),
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0)
    );
    print_breakdown();
    running.stop().await?;
    Ok(())
}

/// The first three fields of `/proc/loadavg` (1, 5 and 15 minutes).
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------------
// Issue 35: a slow cloud, and a burst of jobs against it.

/// `--create-delay SECS`: every provider create takes this long.
static CREATE_DELAY: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// What the slow fake's creates are doing (`--create-delay`).
static IN_FLIGHT: std::sync::LazyLock<Arc<InFlight>> = std::sync::LazyLock::new(Arc::default);

/// Removes `--create-delay SECS` from the arguments and records it.
fn take_create_delay(mut args: Vec<String>) -> Result<Vec<String>> {
    if let Some(at) = args.iter().position(|a| a == "--create-delay") {
        let secs: f64 = args
            .get(at + 1)
            .context("--create-delay takes a number of seconds")?
            .parse()
            .context("--create-delay takes a number of seconds")?;
        let delay = Duration::try_from_secs_f64(secs).context("--create-delay: seconds ≥ 0")?;
        let _ = CREATE_DELAY.set(delay);
        args.drain(at..at + 2);
    }
    Ok(args)
}

/// Creates running now, the most at once, and when each began (after the provider's call
/// limits admitted it: the moment a real cloud would be asked).
#[derive(Debug, Default)]
struct InFlight {
    running: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    starts: Mutex<Vec<Instant>>,
}

/// The fake provider with creates that take `delay` (a cloud whose create takes 30–90 s).
struct SlowCreates {
    inner: Arc<dyn Provider>,
    delay: Duration,
    in_flight: Arc<InFlight>,
}

#[async_trait]
impl Provider for SlowCreates {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, ProviderError> {
        use std::sync::atomic::Ordering::SeqCst;
        lock(&self.in_flight.starts).push(Instant::now());
        let now = self.in_flight.running.fetch_add(1, SeqCst) + 1;
        self.in_flight.most.fetch_max(now, SeqCst);
        tokio::time::sleep(self.delay).await;
        self.in_flight.running.fetch_sub(1, SeqCst);
        self.inner.create(request).await
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.delete(pool, instance).await
    }
    async fn get(
        &self,
        pool: &Pool,
        instance: &InstanceId,
    ) -> Result<ProviderInstance, ProviderError> {
        self.inner.get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, ProviderError> {
        self.inner.list(pool).await
    }
    async fn remove_all(&self) -> Result<(), ProviderError> {
        self.inner.remove_all().await
    }
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.start(pool, instance).await
    }
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.stop(pool, instance).await
    }
    async fn version(&self) -> Result<String, ProviderError> {
        self.inner.version().await
    }
}

/// VmHWM (peak resident set) of this process in KiB.
fn peak_rss_kib() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/self/status")
}

/// `jobs` jobs enqueued at once over `sets` scale sets (each allowed its share of runners),
/// against the fake provider whose creates take `--create-delay` (30 s unless given): the
/// delay from the burst to each create's start, how many ran at once, and the memory.
async fn burst(sets: usize, jobs: u64, transport: Transport) -> Result<()> {
    let delay = *CREATE_DELAY.get_or_init(|| Duration::from_secs(30));
    let mut sim = Sim::start(transport).await?;
    let dir = tempfile::tempdir()?;
    println!(
        "burst: {jobs} jobs at once over {sets} scale sets, creates take {delay:?}, transport {transport:?}"
    );
    let share = u32::try_from(jobs.div_ceil(sets.max(1) as u64)).unwrap_or(u32::MAX);
    let store = populate(dir.path(), "burst.db", &sim, sets, share).await?;
    let running = start(store.clone(), transport, fake_provider(), None);
    until_listening(
        &mut sim,
        &store,
        sets,
        Instant::now(),
        Duration::from_secs(600),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_before = rss_kib(std::process::id())?;
    let peak_before = peak_rss_kib()?;
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    lock(&IN_FLIGHT.starts).clear();
    let t0 = Instant::now();
    sim.ask(&format!("burst {jobs}")).await?;
    let enqueued = t0.elapsed();
    let expected = usize::try_from(jobs).unwrap_or(usize::MAX);
    let limit = delay + Duration::from_secs(120);
    let mut most_rss = rss_before;
    loop {
        let started = lock(&IN_FLIGHT.starts).len();
        most_rss = most_rss.max(rss_kib(std::process::id())?);
        if started >= expected {
            break;
        }
        if t0.elapsed() > limit {
            eprintln!("after {limit:?} only {started} of {expected} creates started");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all_started = t0.elapsed();
    // Every create lands: the instances are recorded.
    tokio::time::sleep(delay + Duration::from_secs(5)).await;
    most_rss = most_rss.max(rss_kib(std::process::id())?);
    let mut delays: Vec<Duration> = lock(&IN_FLIGHT.starts)
        .iter()
        .map(|at| at.saturating_duration_since(t0))
        .collect();
    delays.sort_unstable();
    if delays.is_empty() {
        bail!("no create started");
    }
    let at = |q: f64| delays[((delays.len() - 1) as f64 * q).round() as usize];
    let mut recorded = 0;
    for set in store.list_scale_sets(None).await? {
        recorded += scaleset_store::InstanceStore::list_instances(&*store, set.id)
            .await?
            .iter()
            .filter(|i| i.status == scaleset_store::InstanceStatus::Running)
            .count();
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before: {}", load_before.trim());
    println!("load average after:  {}", load_after.trim());
    println!("burst enqueued in the simulator in {enqueued:.2?}");
    println!(
        "creates started: {} of {expected}, all by {all_started:.2?}; delay from the burst p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        delays.len(),
        at(0.50),
        at(0.99),
        at(1.0)
    );
    println!(
        "creates in flight at once: at most {}",
        IN_FLIGHT.most.load(std::sync::atomic::Ordering::SeqCst)
    );
    println!("instances recorded running after the creates landed: {recorded}");
    println!(
        "worker RSS before the burst {rss_before} KiB, highest sampled during it {most_rss} KiB; peak (VmHWM) before {peak_before} KiB, after {} KiB",
        peak_rss_kib()?
    );
    print_breakdown();
    running.stop().await?;
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// User plus system CPU time of `pid` in clock ticks (100 per second on Linux).
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command name.
    let field = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .context("a short /proc/<pid>/stat")?
            .parse()
            .context("a non-numeric CPU time")
    };
    Ok(field(11)? + field(12)?)
}
