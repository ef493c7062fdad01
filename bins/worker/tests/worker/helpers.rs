//! The harness: a simulator in this test process on a loopback port, a temp directory holding
//! the worker's configuration, SQLite database and the fake provider's instance files, and the
//! built `scaleset-worker` binary run as a real process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use scaleset_sim::{JobSpec, SimConfig};
use scaleset_store::test_util::test_key;
use scaleset_store::{
    DatabaseUrl, DieselStore, Event, EventStore as _, Keyring, ScaleSet, ScaleSetStore as _,
    StoreOptions,
};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_scaleset-worker");
pub(crate) const KEY: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
pub(crate) const CONTROLLER: &str = "3f2a9c1e-77b0-4d4e-9a55-0123456789ab";

/// A simulator serving on `127.0.0.1:0` in this process: the simulator's own harness (its
/// fields through `Deref`) with the queries these tests make of it.
pub(crate) struct RunningSim(scaleset_sim::RunningSim);

impl std::ops::Deref for RunningSim {
    type Target = scaleset_sim::RunningSim;
    fn deref(&self) -> &scaleset_sim::RunningSim {
        &self.0
    }
}

impl RunningSim {
    pub(crate) async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// [`RunningSim::start`] with the configuration adjusted by `adjust` first.
    pub(crate) async fn start_with(adjust: impl FnOnce(&mut SimConfig)) -> Self {
        let mut config = SimConfig {
            long_poll_hold: Duration::from_millis(200),
            tick_interval: Duration::from_millis(20),
            ..SimConfig::default()
        };
        adjust(&mut config);
        Self(
            scaleset_sim::RunningSim::start(config)
                .await
                .expect("simulator"),
        )
    }

    /// The GitHub id of the scale set named `name`, once exactly one exists.
    pub(crate) fn scale_set_id(&self, name: &str) -> Option<i64> {
        let state = self.sim.state();
        let found: Vec<_> = state.scale_sets_named(name).collect();
        (found.len() == 1).then(|| found[0].id)
    }

    /// Whether the scale set has a session.
    pub(crate) fn has_session(&self, id: i64) -> bool {
        self.sim
            .state()
            .scale_set(id)
            .is_some_and(|s| s.session.is_some())
    }

    /// The states of the scale set's jobs.
    pub(crate) fn job_states(&self, id: i64) -> Vec<String> {
        self.sim
            .state()
            .jobs_of(id)
            .map(|j| j.state.clone())
            .collect()
    }

    /// Waits (saying `what`) until the scale set named `name` exists on GitHub with a session;
    /// returns its GitHub id.
    pub(crate) async fn listening(&self, what: &str, name: &str) -> i64 {
        eventually(what, || async {
            let id = self.scale_set_id(name)?;
            self.has_session(id).then_some(id)
        })
        .await
    }

    /// Waits (saying `what`) until every scale set of `ids` has a session.
    pub(crate) async fn all_listening(&self, what: &str, ids: &[i64]) {
        eventually(what, || async {
            ids.iter().all(|id| self.has_session(*id)).then_some(())
        })
        .await;
    }

    /// Enqueues `count` jobs for the scale set.
    pub(crate) fn enqueue(&self, id: i64, count: u32) {
        self.sim
            .enqueue_jobs(id, &JobSpec::count(count))
            .expect("enqueue");
    }

    /// Waits (saying `what`) until the scale set has exactly `count` jobs, every one running.
    pub(crate) async fn all_running(&self, what: &str, id: i64, count: usize) {
        eventually(what, || async {
            let states = self.job_states(id);
            (states.len() == count && states.iter().all(|s| s == "running")).then_some(())
        })
        .await;
    }
}

/// A simulator and a SQLite site with the one scale set `linux`: where most tests start.
pub(crate) async fn linux_site() -> (RunningSim, Site) {
    let sim = RunningSim::start().await;
    let site = Site::new(&sim, &["linux"]);
    (sim, site)
}

/// A PostgreSQL database for the test `what` (see [`PgDatabase::for_test`]), a simulator, and a
/// site on that database with `scale_sets`; `None`, and the test skips, without PostgreSQL.
pub(crate) async fn postgres_site(
    what: &str,
    scale_sets: &[&str],
) -> Option<(PgDatabase, RunningSim, Site)> {
    let db = PgDatabase::for_test(what)?;
    let sim = RunningSim::start().await;
    let site = Site::postgres(&sim, scale_sets, &db.url);
    Some((db, sim, site))
}

/// A directory with the configuration, the database and the fake cloud.
pub(crate) struct Site {
    pub(crate) dir: tempfile::TempDir,
    /// The database the site's workers share (the SQLite file, or a PostgreSQL database).
    database_url: String,
}

impl Site {
    pub(crate) fn new(sim: &RunningSim, scale_sets: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let database_url = format!("sqlite://{}", dir.path().join("scaleset.db").display());
        let site = Self { dir, database_url };
        std::fs::create_dir_all(site.cloud()).expect("cloud dir");
        std::fs::write(site.config(), site.config_text(sim, scale_sets)).expect("config");
        site
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.dir.path().join("worker.toml")
    }

    pub(crate) fn db(&self) -> PathBuf {
        self.dir.path().join("scaleset.db")
    }

    pub(crate) fn cloud(&self) -> PathBuf {
        self.dir.path().join("cloud")
    }

    /// A site whose workers share the PostgreSQL database at `url`, each with a short lease.
    pub(crate) fn postgres(sim: &RunningSim, scale_sets: &[&str], url: &str) -> Self {
        let mut site = Self::new(sim, scale_sets);
        site.database_url = url.to_owned();
        let text = std::fs::read_to_string(site.config())
            .expect("config")
            .replace(
                &format!("url = \"sqlite://{}\"", site.db().display()),
                &format!("url = \"{url}\""),
            )
            .replace("lease_ttl = \"10s\"", "lease_ttl = \"3s\"");
        std::fs::write(site.config(), text).expect("config");
        site
    }

    fn config_text(&self, sim: &RunningSim, scale_sets: &[&str]) -> String {
        let base = format!("http://{}", sim.addr);
        let mut text = format!(
            r#"
controller_id = "{CONTROLLER}"

[database]
url = "sqlite://{db}"
busy_timeout = "20s"

[encryption]
primary_key_id = "k1"

[[encryption.keys]]
id = "k1"
env = "TEST_SCALESET_KEY"

[worker]
name = "worker-a"
listen = "127.0.0.1:0"
lease_ttl = "10s"
watch_interval = "100ms"
backoff_base = "10ms"
backoff_max = "500ms"
refused_recheck = "500ms"
foreign_session_recheck = "500ms"
reconcile_interval = "200ms"
shutdown_timeout = "20s"

[[provider]]
name = "fake"
kind = "fake"

[fake]
allow = true
state_dir = "{cloud}"
simulator_url = "{base}"

[[credentials]]
name = "sim"
base_url = "{base}"
api_base_url = "{base}/api/v3"
token_env = "TEST_GITHUB_TOKEN"
"#,
            db = self.db().display(),
            cloud = self.cloud().display(),
        );
        for name in scale_sets {
            text.push_str(&format!(
                r#"
[[scale_set]]
name = "{name}"
credentials = "sim"
organization = "acme"
provider = "fake"
image = "ubuntu"
flavor = "small"
max_runners = 10
disable_update = true
"#
            ));
        }
        text
    }

    /// The store the site's workers write, opened as another process would (no writer lock:
    /// it only reads). What happened is learned from here, never from a worker's log.
    pub(crate) async fn store(&self) -> DieselStore {
        store_at(&self.database_url).await
    }

    /// A stored scale set by name.
    pub(crate) async fn scale_set(&self, name: &str) -> Option<ScaleSet> {
        scale_set_in(&self.database_url, name).await
    }

    /// The events of the scale set `name`, oldest first (empty while it is not stored).
    pub(crate) async fn events(&self, name: &str) -> Vec<Event> {
        let Some(set) = self.scale_set(name).await else {
            return Vec::new();
        };
        let mut events = self
            .store()
            .await
            .list_events(set.id, 1000)
            .await
            .expect("list events");
        events.sort_by_key(|event| event.id);
        events
    }

    /// How many events of `kind` the scale set `name` has had (a repeat counts again).
    pub(crate) async fn count_events(&self, name: &str, kind: scaleset_store::EventKind) -> u64 {
        self.events(name)
            .await
            .iter()
            .filter(|event| event.kind == kind)
            .map(|event| event.count)
            .sum()
    }

    /// Every fake instance file: `(pool key, name)`.
    pub(crate) fn instances(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for pool in std::fs::read_dir(self.cloud())
            .expect("cloud dir")
            .flatten()
        {
            let key = pool.file_name().to_string_lossy().into_owned();
            if key.starts_with('.') {
                continue; // the fake's staging directory
            }
            for file in std::fs::read_dir(pool.path()).expect("pool dir").flatten() {
                let name = file
                    .file_name()
                    .to_string_lossy()
                    .trim_end_matches(".json")
                    .to_owned();
                out.push((key.clone(), name));
            }
        }
        out.sort();
        out
    }

    /// Deletes the database and its WAL files: a lost disk.
    pub(crate) fn wipe_database(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let path = PathBuf::from(format!("{}{suffix}", self.db().display()));
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => panic!("cannot remove {}: {e}", path.display()),
            }
        }
    }
}

/// The store at `database_url`, opened as another process would (it takes no writer lock).
pub(crate) async fn store_at(database_url: &str) -> DieselStore {
    let url = DatabaseUrl::parse(database_url).expect("a database URL");
    let options = StoreOptions::new(url, Keyring::new(test_key("k1", 1)))
        .pool_size(1)
        .busy_timeout(Duration::from_secs(20));
    DieselStore::open(options).await.expect("open the store")
}

/// The scale set `name` stored at `database_url`, if stored.
pub(crate) async fn scale_set_in(database_url: &str, name: &str) -> Option<ScaleSet> {
    let sets = store_at(database_url)
        .await
        .list_scale_sets(None)
        .await
        .expect("list scale sets");
    sets.into_iter().find(|set| set.spec.name() == name)
}

/// [`worker_env`] with `extra` added after it.
pub(crate) fn worker_env_with(extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut env = worker_env();
    env.extend(extra.iter().map(|(key, value)| (*key, (*value).to_owned())));
    env
}

/// The environment a worker runs with (the process environment is never touched).
pub(crate) fn worker_env() -> Vec<(&'static str, String)> {
    vec![
        ("TEST_SCALESET_KEY", KEY.to_owned()),
        ("TEST_GITHUB_TOKEN", "ghp_simulator".to_owned()),
        ("RUST_LOG", "info,scaleset_control=debug".to_owned()),
    ]
}

/// A running worker process.
///
/// Its stderr is kept for failure messages only: [`Worker::log`] can be printed but not
/// searched, so a test learns what happened from typed state (the store, the simulator,
/// `/readyz`, `/metrics`, the exit status), never from a log line. The tests whose subject is
/// the log itself read it through [`Worker::log_lines`] (the structure test
/// `process_tests_read_no_log_to_decide` names where).
pub(crate) struct Worker {
    pub(crate) child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

/// A worker's stderr so far, for a failure message: `Display` only, no `contains`.
pub(crate) struct Log(String);

impl std::fmt::Display for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Worker {
    /// Starts the binary on `config` with `env`, logging JSON.
    pub(crate) fn spawn(config: &Path, env: &[(&str, String)]) -> Self {
        Self::spawn_logging(config, env, "json")
    }

    /// Starts the binary on `config` with `env` and `--log-format <format>`.
    pub(crate) fn spawn_logging(config: &Path, env: &[(&str, String)], format: &str) -> Self {
        let mut command = Command::new(BIN);
        command
            .arg("--config")
            .arg(config)
            .arg("--log-format")
            .arg(format)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("start scaleset-worker");
        let stderr = child.stderr.take().expect("stderr piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn({
            let lines = lines.clone();
            async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if std::env::var_os("WORKER_LOG").is_some() {
                        eprintln!("worker: {line}");
                    }
                    lines.lock().expect("lines").push(line);
                }
            }
        });
        Self { child, lines }
    }

    pub(crate) fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id().expect("running")).expect("pid"))
    }

    /// Every stderr line so far, for a failure message (see [`Log`]).
    pub(crate) fn log(&self) -> Log {
        Log(self.lines.lock().expect("lines").join("\n"))
    }

    /// A handle on the stderr lines that stays readable after the process is waited for (the
    /// reader may still be draining a dead process's pipe), for a failure message.
    pub(crate) fn log_handle(&self) -> LogHandle {
        LogHandle(self.lines.clone())
    }

    /// Every stderr line so far, as text: only for the tests whose subject is the log (its
    /// format, its fields) and the soak's report of notable lines, never to learn what happened.
    pub(crate) fn log_lines(&self) -> Vec<String> {
        self.lines.lock().expect("lines").clone()
    }

    /// The sum of this worker's series `name` whose labels include every pair of `labels`
    /// (0 when it exports none), read from its `/metrics`.
    pub(crate) async fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let (status, body) = get(self.listen().await, "/metrics").await;
        assert_eq!(status, 200, "/metrics answered {status}: {body}");
        sum_series(&body, name, labels)
    }

    /// The address of the health and metrics listener, from the ready line the binary prints
    /// whatever its log format (`scaleset-worker listening on http://ADDR`, docs/operations.md).
    pub(crate) async fn listen(&self) -> SocketAddr {
        eventually("the worker prints its ready line", || async {
            self.lines.lock().expect("lines").iter().find_map(|line| {
                line.strip_prefix("scaleset-worker listening on http://")?
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .await
    }

    /// Sends `signal` once the process is in `main` (see [`reached_main`]) and waits (bounded)
    /// for the exit code.
    pub(crate) async fn signal_and_wait(mut self, signal: Signal) -> Option<i32> {
        // Before `main` (the dynamic loader, Rust's runtime set-up) no binary can handle a
        // signal; from `main`'s first line on the worker must (issue 36). A worker started a
        // moment ago is still signalled during its start-up, which is what found that.
        let waited = std::time::Instant::now();
        while !reached_main(self.pid())
            && matches!(self.child.try_wait(), Ok(None))
            && waited.elapsed() < Duration::from_secs(30)
        {
            // Busy-polled: a pause between reads would let the start-up run past the window.
            tokio::task::yield_now().await;
        }
        kill(self.pid(), signal).expect("signal the worker");
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("the worker exits within 60 s")
            .expect("wait for the worker");
        status.code()
    }

    /// Waits (bounded) for the process to exit by itself.
    pub(crate) async fn exit_code(self) -> Option<i32> {
        self.exit_status().await.code()
    }

    /// Waits (bounded) for the process to exit by itself: its status (the signal that ended
    /// it, if one did).
    pub(crate) async fn exit_status(mut self) -> std::process::ExitStatus {
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("the worker exits within 60 s")
            .expect("wait for the worker")
    }
}

/// A worker's stderr lines that outlive the [`Worker`] (consumed by a wait), for a failure
/// message only.
pub(crate) struct LogHandle(Arc<Mutex<Vec<String>>>);

impl LogHandle {
    /// Every stderr line so far.
    pub(crate) fn log(&self) -> Log {
        Log(self.0.lock().expect("lines").join("\n"))
    }

    /// The lines the binary printed to its operator (not log lines): `scaleset-worker: …`, the
    /// error a refused or failed start explains itself with. Like a CLI's answer, that is the
    /// binary's interface, not its log.
    pub(crate) fn answer(&self) -> Vec<String> {
        self.0
            .lock()
            .expect("lines")
            .iter()
            .filter(|line| line.starts_with("scaleset-worker: "))
            .cloned()
            .collect()
    }
}

/// A signal's bit in the masks of `/proc/PID/status`.
const fn signal_bit(signal: Signal) -> u64 {
    1 << (signal as u64 - 1)
}

/// Whether Rust's runtime set-up of the process `pid` has run, seen from outside with no hook
/// in the binary: it ignores SIGPIPE, then catches SIGSEGV (its stack-overflow handler), the
/// last thing it does with a system call before it calls `main` (the `SigIgn` and `SigCgt`
/// masks of `/proc/PID/status`). A few instructions of that set-up remain after it.
pub(crate) fn reached_main(pid: Pid) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let mask = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0)
    };
    mask("SigIgn:") & signal_bit(Signal::SIGPIPE) != 0
        && mask("SigCgt:") & signal_bit(Signal::SIGSEGV) != 0
}

/// GET `path` from the worker's listener: status and body.
pub(crate) async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let uri: hyper::Uri = format!("http://{addr}{path}").parse().expect("uri");
    let response = client.get(uri).await.expect("GET");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The one bounded poll of the workspace's tests.
pub(crate) use scaleset_eventually::eventually;

/// A fresh PostgreSQL database for one test (the workspace's harness): `None`, reported, when
/// `SCALESET_TEST_DATABASE_URL` is unset; a failure then when `SCALESET_REQUIRE_POSTGRES=1`.
pub(crate) use scaleset_store::test_util::PgDatabase;

/// The sum of the series `name` in the exposition `text` whose labels include every pair of
/// `labels`.
pub(crate) fn sum_series(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, label_text) = match series.split_once('{') {
                Some((series_name, rest)) => (series_name, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            let pairs: Vec<&str> = label_text
                .split("\",")
                .map(|p| p.trim_end_matches('"'))
                .collect();
            let matches = series_name == name
                && labels
                    .iter()
                    .all(|(key, wanted)| pairs.contains(&format!("{key}=\"{wanted}").as_str()));
            matches.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

#[test]
fn sum_series_adds_the_series_whose_labels_match() {
    let text = "# TYPE scaleset_provider_calls counter\n\
                scaleset_provider_calls_total{provider=\"fake\",command=\"create\"} 2\n\
                scaleset_provider_calls_total{provider=\"other\",command=\"create\"} 3\n\
                scaleset_provider_calls_total{provider=\"fake\",subcommand=\"create\"} 5\n\
                scaleset_provider_calls_total{provider=\"fake\",command=\"delete\"} 7\n\
                scaleset_leases_held 1\n";
    let calls = "scaleset_provider_calls_total";
    assert_eq!(sum_series(text, calls, &[("command", "create")]), 5.0);
    assert_eq!(
        sum_series(text, calls, &[("provider", "fake"), ("command", "create")]),
        2.0
    );
    assert_eq!(sum_series(text, calls, &[]), 17.0);
    assert_eq!(sum_series(text, "scaleset_leases_held", &[]), 1.0);
    assert_eq!(sum_series(text, "scaleset_absent", &[]), 0.0);
}
