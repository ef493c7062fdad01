//! `fleet compare N [--vs COMMAND] [--worker PATH]` (issue 53 item 3): scaleset and another
//! controller side by side on one simulator with one recording provider, each measured as a
//! process tree: RSS, idle CPU, start → all N listening, and GitHub and provider calls per set.
//!
//! One simulator child (as the other modes) seeds two organizations, one per side, so the
//! listeners of each are counted apart (`Simulator::listening`). scaleset's side is the real
//! `scaleset-worker` binary started as a child with a generated configuration declaring N scale
//! sets; the other side is `sh -c COMMAND` with the `SCALESET_BENCH_*` variables below telling it
//! where GitHub is. The sides run one after the other, scaleset first, each stopped before the
//! next starts, so neither's CPU is measured beside the other's; the simulator's request counts
//! are cleared between them. Without `--vs`, scaleset's figures alone.
//!
//! `fleet compare-worker` is a `--vs` command: it writes a worker configuration from those
//! variables and becomes `scaleset-worker` (a second scaleset to show the table with, and the
//! shape a GARM wrapper takes). Kept apart from `fleet.rs`, as `workers.rs` is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use super::rss::rss_kib;
use super::{Sim, Transport, load_average};

/// The organization scaleset's side declares its scale sets in.
pub(crate) const SCALESET_ORG: &str = "bench-scaleset";
/// The organization the `--vs` side is told to use.
pub(crate) const VS_ORG: &str = "bench-vs";
/// The PAT the simulator accepts for every seeded scope.
const TOKEN: &str = "ghp_simulator";
/// The encryption key a generated worker configuration reads (32 bytes of 1, base64).
const KEY: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";

/// The recording provider: a GARM external provider (interface v0.1.0) that creates nothing
/// and appends every call, `COMMAND POOL INSTANCE`, to the file named on the first line of its
/// config file. Shell builtins only: providers run with a cleared environment (no `PATH`).
const RECORDING_PROVIDER: &str = r#"#!/bin/sh
# fleet compare's recording provider (docs/benchmarks.md, "scaleset beside another controller").
read -r calls < "$GARM_PROVIDER_CONFIG_FILE" || { echo "no calls file in $GARM_PROVIDER_CONFIG_FILE" >&2; exit 1; }
echo "$GARM_COMMAND ${GARM_POOL_ID:-} ${GARM_INSTANCE_ID:-}" >> "$calls"
case "$GARM_COMMAND" in
  ListInstances) echo '[]' ;;
  GetVersion) echo 'v0.1.0' ;;
  GetInstance) echo "instance ${GARM_INSTANCE_ID:-} not found" >&2; exit 30 ;;
  CreateInstance) echo "the recording provider creates nothing" >&2; exit 1 ;;
esac
exit 0
"#;

/// What the other side is told, one variable each (documented in docs/benchmarks.md).
pub(crate) struct BenchEnv {
    /// `SCALESET_BENCH_GITHUB_URL`: the simulator as a GHES base URL.
    pub(crate) github_url: String,
    /// `SCALESET_BENCH_API_URL`: its REST API base (`…/api/v3`).
    pub(crate) api_url: String,
    /// `SCALESET_BENCH_TOKEN`: a PAT valid for the organization.
    pub(crate) token: String,
    /// `SCALESET_BENCH_ORG`: the organization to declare the scale sets in.
    pub(crate) org: String,
    /// `SCALESET_BENCH_SETS`: how many scale sets.
    pub(crate) sets: usize,
    /// `SCALESET_BENCH_PROVIDER`: the recording provider's executable.
    pub(crate) provider: PathBuf,
    /// `SCALESET_BENCH_PROVIDER_CONFIG`: its config file (`GARM_PROVIDER_CONFIG_FILE`).
    pub(crate) provider_config: PathBuf,
    /// `SCALESET_BENCH_DIR`: an empty scratch directory of the side's own.
    pub(crate) dir: PathBuf,
    /// `SCALESET_BENCH_CONTROL_URL`: the simulator's control API (`…/_sim`), to inspect it.
    pub(crate) control_url: String,
}

impl BenchEnv {
    fn vars(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SCALESET_BENCH_GITHUB_URL", self.github_url.clone()),
            ("SCALESET_BENCH_API_URL", self.api_url.clone()),
            ("SCALESET_BENCH_TOKEN", self.token.clone()),
            ("SCALESET_BENCH_ORG", self.org.clone()),
            ("SCALESET_BENCH_SETS", self.sets.to_string()),
            (
                "SCALESET_BENCH_PROVIDER",
                self.provider.display().to_string(),
            ),
            (
                "SCALESET_BENCH_PROVIDER_CONFIG",
                self.provider_config.display().to_string(),
            ),
            ("SCALESET_BENCH_DIR", self.dir.display().to_string()),
            ("SCALESET_BENCH_CONTROL_URL", self.control_url.clone()),
            (
                "SCALESET_BENCH_START_FILE",
                self.start_file().display().to_string(),
            ),
        ]
    }

    /// `SCALESET_BENCH_START_FILE`: a command that sets its controller up before starting it
    /// for good (scale sets created through a CLI against a first run) creates this file just
    /// before that start; "start → all listening" is then also timed from the file's mtime.
    fn start_file(&self) -> PathBuf {
        self.dir.join("started")
    }

    /// Reads the variables back (in `compare-worker`).
    fn from_env() -> Result<Self> {
        let var = |name: &str| {
            std::env::var(name).with_context(|| format!("{name} is not set (run under compare)"))
        };
        Ok(Self {
            github_url: var("SCALESET_BENCH_GITHUB_URL")?,
            api_url: var("SCALESET_BENCH_API_URL")?,
            token: var("SCALESET_BENCH_TOKEN")?,
            org: var("SCALESET_BENCH_ORG")?,
            sets: var("SCALESET_BENCH_SETS")?
                .parse()
                .context("SCALESET_BENCH_SETS is a number")?,
            provider: var("SCALESET_BENCH_PROVIDER")?.into(),
            provider_config: var("SCALESET_BENCH_PROVIDER_CONFIG")?.into(),
            dir: var("SCALESET_BENCH_DIR")?.into(),
            control_url: var("SCALESET_BENCH_CONTROL_URL")?,
        })
    }

    /// A `scaleset-worker` configuration declaring `sets` scale sets `bench-00000`… in the
    /// organization, on the recording provider, with a SQLite database in the scratch
    /// directory and default production settings otherwise. The key comes from
    /// `SCALESET_BENCH_KEY`, the token from `SCALESET_BENCH_TOKEN`.
    fn worker_config(&self, controller_id: &str) -> String {
        let mut text = format!(
            r#"controller_id = "{controller_id}"

[database]
url = "sqlite://{db}"

[encryption]
primary_key_id = "k1"

[[encryption.keys]]
id = "k1"
env = "SCALESET_BENCH_KEY"

[worker]
name = "bench-{org}"
listen = "127.0.0.1:0"
# Required with an external provider; no instance is ever created, so nothing calls it.
instance_api_url = "http://127.0.0.1:9"

[[provider]]
name = "recording"
kind = "external"
executable = "{provider}"
config_file = "{provider_config}"

[[credentials]]
name = "sim"
base_url = "{github}"
api_base_url = "{api}"
token_env = "SCALESET_BENCH_TOKEN"
"#,
            db = self.dir.join("scaleset.db").display(),
            org = self.org,
            provider = self.provider.display(),
            provider_config = self.provider_config.display(),
            github = self.github_url,
            api = self.api_url,
        );
        for i in 0..self.sets {
            text.push_str(&format!(
                "\n[[scale_set]]\nname = \"bench-{i:05}\"\ncredentials = \"sim\"\n\
                 organization = \"{}\"\nprovider = \"recording\"\nimage = \"ubuntu\"\n\
                 flavor = \"small\"\nmax_runners = 10\ndisable_update = true\n",
                self.org
            ));
        }
        text
    }
}

/// `fleet compare-worker`: a `--vs` command that becomes `scaleset-worker` on a configuration
/// written from the `SCALESET_BENCH_*` variables (the worker binary beside the example, or
/// `SCALESET_BENCH_WORKER`).
pub(crate) fn compare_worker() -> Result<()> {
    use std::os::unix::process::CommandExt as _;
    let bench = BenchEnv::from_env()?;
    let worker = match std::env::var_os("SCALESET_BENCH_WORKER") {
        Some(path) => PathBuf::from(path),
        None => worker_beside_example()?,
    };
    let config = bench.dir.join("worker.toml");
    std::fs::write(
        &config,
        bench.worker_config("7b0c4d2e-1a3f-4e5d-8c6b-00000000c0de"),
    )?;
    let error = std::process::Command::new(&worker)
        .arg("--config")
        .arg(&config)
        .env("SCALESET_BENCH_KEY", KEY)
        .exec();
    Err(error).with_context(|| format!("cannot run {}", worker.display()))
}

/// `target/<profile>/scaleset-worker`, beside `target/<profile>/examples/fleet`.
fn worker_beside_example() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .context("the example is not under target/<profile>/examples")?;
    let worker = profile.join("scaleset-worker");
    if !worker.is_file() {
        let release = profile.ends_with("release");
        bail!(
            "no worker binary at {}: build it with `cargo build{} -p scaleset-worker-bin` (or \
             name one with --worker PATH)",
            worker.display(),
            if release { " --release" } else { "" }
        );
    }
    Ok(worker)
}

/// Parses `N [--vs COMMAND] [--worker PATH]` (the words after `compare`) and runs the mode.
pub(crate) fn main(args: &[String], runtime: &tokio::runtime::Runtime) -> Result<()> {
    let usage = "usage: fleet compare N [--vs COMMAND] [--worker PATH]";
    let mut sets = None;
    let mut vs = None;
    let mut worker = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--vs" => vs = Some(words.next().context(usage)?.clone()),
            "--worker" => worker = Some(PathBuf::from(words.next().context(usage)?)),
            number => {
                let n: usize = number.parse().with_context(|| {
                    format!("{number:?} is not a number of scale sets; {usage}")
                })?;
                sets = Some(n);
            }
        }
    }
    let sets = sets.unwrap_or(1000);
    if sets == 0 {
        bail!("{usage} (N above 0)");
    }
    let worker = match worker {
        Some(path) => path,
        None => worker_beside_example()?,
    };
    runtime.block_on(run(sets, vs, worker))
}

/// The measured seconds of the settling and idle windows (`SCALESET_BENCH_SETTLE`,
/// `SCALESET_BENCH_WINDOW`; 20 and 60 by default, as `density`).
fn windows() -> (Duration, Duration) {
    let secs = |name: &str, default: u64| {
        Duration::from_secs(
            std::env::var(name)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(default),
        )
    };
    (
        secs("SCALESET_BENCH_SETTLE", 20),
        secs("SCALESET_BENCH_WINDOW", 60),
    )
}

/// One side's figures.
#[derive(Debug, Default)]
struct Figures {
    listening_after: Duration,
    /// From the mtime of the start file, when the command created one.
    listening_after_start_file: Option<Duration>,
    rss_listening_kib: u64,
    rss_end_kib: u64,
    processes: usize,
    idle_cpu_percent: f64,
    window: Duration,
    github_to_listening: BTreeMap<String, u64>,
    github_total: BTreeMap<String, u64>,
    provider_to_listening: BTreeMap<String, u64>,
    provider_total: BTreeMap<String, u64>,
    listening_at_end: usize,
    load_before: String,
    load_after: String,
}

async fn run(sets: usize, vs: Option<String>, worker: PathBuf) -> Result<()> {
    let mut sim = Sim::start(Transport::Http1).await?;
    let scratch = tempfile::tempdir()?;
    match sides(&mut sim, scratch.path(), sets, vs, worker).await {
        Ok(()) => Ok(()),
        Err(error) => {
            // Each side's stdout, stderr, configuration and provider calls, for a post-mortem.
            let kept = scratch.keep();
            Err(error.context(format!("the scratch directory is kept: {}", kept.display())))
        }
    }
}

async fn sides(
    sim: &mut Sim,
    scratch: &Path,
    sets: usize,
    vs: Option<String>,
    worker: PathBuf,
) -> Result<()> {
    let provider = scratch.join("recording-provider");
    write_executable(&provider, RECORDING_PROVIDER)?;
    let (settle, window) = windows();
    println!(
        "compare: {sets} scale sets a side, one simulator at {}, the recording provider; settle \
         {settle:?}, idle window {window:?}",
        sim.base
    );
    let base = sim.base.clone();
    let side_env = |org: &str, name: &str| -> Result<BenchEnv> {
        let dir = scratch.join(name);
        std::fs::create_dir_all(&dir)?;
        let provider_config = scratch.join(format!("{name}-provider.conf"));
        let calls = scratch.join(format!("{name}-provider-calls"));
        std::fs::write(&provider_config, format!("{}\n", calls.display()))?;
        Ok(BenchEnv {
            github_url: base.clone(),
            api_url: format!("{base}/api/v3"),
            token: TOKEN.to_owned(),
            org: org.to_owned(),
            sets,
            provider: provider.clone(),
            provider_config,
            dir,
            control_url: format!("{base}/_sim"),
        })
    };

    let ours = side_env(SCALESET_ORG, "scaleset")?;
    let config = ours.dir.join("worker.toml");
    std::fs::write(
        &config,
        ours.worker_config("3f2a9c1e-77b0-4d4e-9a55-0000000bec00"),
    )?;
    let mut command = tokio::process::Command::new(&worker);
    command
        .arg("--config")
        .arg(&config)
        .env_clear()
        .env("SCALESET_BENCH_KEY", KEY)
        .env("SCALESET_BENCH_TOKEN", TOKEN)
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        );
    println!(
        "scaleset: {} --config {}",
        worker.display(),
        config.display()
    );
    let scaleset = measure(sim, &ours, command, "scaleset", settle, window).await?;

    let theirs = match vs {
        None => None,
        Some(line) => {
            sim.ask("clear").await?;
            let env = side_env(VS_ORG, "vs")?;
            let mut command = tokio::process::Command::new("sh");
            command.arg("-c").arg(&line).envs(env.vars());
            println!("vs: sh -c {line:?}");
            Some(measure(sim, &env, command, "the --vs command", settle, window).await?)
        }
    };
    print_table(sets, &scaleset, theirs.as_ref());
    Ok(())
}

fn write_executable(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Runs one side's `command` (in a process group of its own, output kept in its scratch
/// directory) until all its scale sets listen, lets it settle, measures the idle window, and
/// stops it (SIGTERM to the group, SIGKILL after 30 s).
async fn measure(
    sim: &mut Sim,
    env: &BenchEnv,
    mut command: tokio::process::Command,
    who: &str,
    settle: Duration,
    window: Duration,
) -> Result<Figures> {
    let stdout = std::fs::File::create(env.dir.join("stdout"))?;
    let stderr_path = env.dir.join("stderr");
    let stderr = std::fs::File::create(&stderr_path)?;
    command
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true);
    let load_before = load_average();
    let t0 = Instant::now();
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {who}"))?;
    let pid = child.id().context("the child has no pid")?;
    let mut side = Side {
        child: &mut child,
        group: pid,
        who,
        stderr: &stderr_path,
    };
    let mut figures = Figures {
        load_before,
        window,
        ..Figures::default()
    };
    let limit = Duration::from_secs(600).max(Duration::from_millis(300) * env.sets as u32);
    let mut last_report = Instant::now();
    loop {
        side.alive()?;
        let now = listening(sim, &env.org).await?;
        if now.listening >= env.sets {
            figures.listening_after = t0.elapsed();
            figures.listening_after_start_file = std::fs::metadata(env.start_file())
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| std::time::SystemTime::now().duration_since(at).ok());
            break;
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!(
                "  … {who}, {:.0?}: {} of {} listening ({} sets, {} sessions)",
                t0.elapsed(),
                now.listening,
                env.sets,
                now.scale_sets,
                now.sessions
            );
            last_report = Instant::now();
        }
        if t0.elapsed() > limit {
            side.stop().await;
            bail!(
                "{who}: after {limit:?} only {} of {} scale sets listen in {}",
                now.listening,
                env.sets,
                env.org
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    figures.rss_listening_kib = tree_rss_kib(pid)?;
    figures.github_to_listening = sim.counts().await?;
    figures.provider_to_listening = provider_calls(&env.provider_config)?;
    tokio::time::sleep(settle).await;
    side.alive()?;
    let (cpu0, t) = (tree_cpu_ticks(pid)?, Instant::now());
    tokio::time::sleep(window).await;
    side.alive()?;
    let cpu1 = tree_cpu_ticks(pid)?;
    figures.idle_cpu_percent = cpu1.saturating_sub(cpu0) as f64 / t.elapsed().as_secs_f64();
    figures.rss_end_kib = tree_rss_kib(pid)?;
    figures.processes = 1 + descendants(pid)?.len();
    figures.github_total = sim.counts().await?;
    figures.provider_total = provider_calls(&env.provider_config)?;
    figures.listening_at_end = listening(sim, &env.org).await?.listening;
    figures.load_after = load_average();
    side.stop().await;
    Ok(figures)
}

/// The simulator child's `listening ORG` answer.
async fn listening(sim: &mut Sim, org: &str) -> Result<scaleset_sim::Listening> {
    let answer = sim.ask(&format!("listening {org}")).await?;
    serde_json::from_str(&answer).with_context(|| format!("the simulator answered {answer:?}"))
}

/// A side's process and where its stderr goes.
struct Side<'a> {
    child: &'a mut tokio::process::Child,
    /// Its process group (its pid): what a command left running in the background is in.
    group: u32,
    who: &'a str,
    stderr: &'a Path,
}

impl Side<'_> {
    /// Fails, with the exit status and the end of stderr, when the side has exited.
    fn alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            // What it started in the background would outlive it otherwise.
            signal_group(self.group, "KILL");
            bail!(
                "{} exited early ({status}); the end of its stderr ({}):\n{}",
                self.who,
                self.stderr.display(),
                tail(self.stderr, 20)
            );
        }
        Ok(())
    }

    /// SIGTERM to the side's process group, then SIGKILL if it is still there after 30 s.
    async fn stop(&mut self) {
        signal_group(self.group, "TERM");
        let waited = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        if waited.is_err() {
            eprintln!("{} did not stop within 30 s of SIGTERM: killed", self.who);
        }
        // Whatever of the group outlived its leader goes too.
        signal_group(self.group, "KILL");
        let _ = self.child.wait().await;
    }
}

/// `kill -SIGNAL -- -GROUP` (the workspace forbids `unsafe`, and has no signal crate here).
fn signal_group(group: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(format!("-{group}"))
        .stderr(std::process::Stdio::null())
        .status();
}

/// The last `lines` lines of a file (empty when it cannot be read).
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The recording provider's calls so far, by command, from the file its config names.
fn provider_calls(config: &Path) -> Result<BTreeMap<String, u64>> {
    let first = std::fs::read_to_string(config)?;
    let calls = first.lines().next().context("an empty provider config")?;
    let text = match std::fs::read_to_string(calls) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.into()),
    };
    Ok(count_commands(&text))
}

/// Counts the first word of every line (`COMMAND POOL INSTANCE`).
fn count_commands(text: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for command in text.lines().filter_map(|l| l.split_whitespace().next()) {
        *counts.entry(command.to_owned()).or_default() += 1;
    }
    counts
}

// ---------------------------------------------------------------------------------------------
// Process trees from /proc.

/// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces and
/// parentheses, so the text is split at the last `)`): index 0 is field 3, the state.
fn stat_fields(stat: &str) -> Vec<&str> {
    stat.rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect()
}

/// The parent pid in a `/proc/<pid>/stat` text (field 4).
fn parent_in(stat: &str) -> Option<u32> {
    stat_fields(stat).get(1)?.parse().ok()
}

/// utime + stime + cutime + cstime (fields 14–17) in a `/proc/<pid>/stat` text, in clock ticks:
/// the process's own CPU and that of the children it has waited for (a provider call that ran
/// and ended is counted to the worker that ran it).
fn cpu_in(stat: &str) -> Result<u64> {
    let fields = stat_fields(stat);
    let mut sum = 0;
    for i in 11..15 {
        sum += fields
            .get(i)
            .context("a short /proc/<pid>/stat")?
            .parse::<u64>()
            .context("a non-numeric CPU time")?;
    }
    Ok(sum)
}

/// Every process below `root` (children, their children, …), from the parent field of every
/// `/proc/<pid>/stat`; processes that end while it reads are skipped.
fn descendants(root: u32) -> Result<Vec<u32>> {
    let mut parents: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc")? {
        let Some(pid) = entry?
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(parent) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .as_deref()
            .and_then(parent_in)
        {
            parents.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for child in parents.get(&pid).into_iter().flatten() {
            found.push(*child);
            next.push(*child);
        }
    }
    Ok(found)
}

/// The VmRSS of `root` and every process below it, summed (pages shared between them, such
/// as a shared library's, counted once per process).
fn tree_rss_kib(root: u32) -> Result<u64> {
    let mut sum = rss_kib(root)?;
    for pid in descendants(root)? {
        // A kernel thread or a process that just ended has none.
        sum += rss_kib(pid).unwrap_or(0);
    }
    Ok(sum)
}

/// [`cpu_in`] of `root` and every process below it, summed.
fn tree_cpu_ticks(root: u32) -> Result<u64> {
    let stat = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat"));
    let mut sum = cpu_in(&stat(root)?)?;
    for pid in descendants(root)? {
        if let Ok(text) = stat(pid) {
            sum += cpu_in(&text).unwrap_or(0);
        }
    }
    Ok(sum)
}

// ---------------------------------------------------------------------------------------------
// The table.

/// The rows of the table, each a label and one side's cell.
fn rows(sets: usize, f: &Figures) -> Vec<(String, String)> {
    let n = sets as f64;
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let per_set =
        |counts: &BTreeMap<String, u64>| format!("{:.2}", counts.values().sum::<u64>() as f64 / n);
    vec![
        (
            format!("start → all {sets} listening"),
            format!("{:.2?}", f.listening_after),
        ),
        (
            format!("start file → all {sets} listening"),
            f.listening_after_start_file
                .map_or_else(|| "(none)".to_owned(), |d| format!("{d:.2?}")),
        ),
        (
            "RSS of the process tree, all listening (provider calls running then included)".into(),
            mib(f.rss_listening_kib),
        ),
        (
            "RSS of the process tree, after the window".into(),
            mib(f.rss_end_kib),
        ),
        (
            "RSS ÷ N, after the window".into(),
            format!("{:.1} KiB", f.rss_end_kib as f64 / n),
        ),
        ("processes in the tree".into(), f.processes.to_string()),
        (
            "idle CPU (% of a core)".into(),
            format!("{:.2} % over {:.0?}", f.idle_cpu_percent, f.window),
        ),
        (
            "GitHub calls per set, to all listening".into(),
            per_set(&f.github_to_listening),
        ),
        (
            "GitHub calls per set, whole run".into(),
            per_set(&f.github_total),
        ),
        (
            "provider calls per set, to all listening".into(),
            per_set(&f.provider_to_listening),
        ),
        (
            "provider calls per set, whole run".into(),
            per_set(&f.provider_total),
        ),
        (
            "listening at the end".into(),
            f.listening_at_end.to_string(),
        ),
        (
            "load average before → after".into(),
            format!("{} → {}", f.load_before, f.load_after),
        ),
    ]
}

fn print_table(sets: usize, ours: &Figures, theirs: Option<&Figures>) {
    let n = sets as f64;
    println!();
    match theirs {
        Some(other) => {
            println!("| figure | scaleset | --vs |\n|---|---|---|");
            for ((label, a), (_, b)) in rows(sets, ours).into_iter().zip(rows(sets, other)) {
                println!("| {label} | {a} | {b} |");
            }
        }
        None => {
            println!("| figure | scaleset |\n|---|---|");
            for (label, a) in rows(sets, ours) {
                println!("| {label} | {a} |");
            }
        }
    }
    println!();
    println!("calls per set by route, whole run (GitHub by the simulator's endpoint names):");
    let mut routes: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (prefix, ours_counts, theirs_counts) in [
        (
            "github",
            &ours.github_total,
            theirs.map(|t| &t.github_total),
        ),
        (
            "provider",
            &ours.provider_total,
            theirs.map(|t| &t.provider_total),
        ),
    ] {
        for (route, count) in ours_counts {
            routes.entry(format!("{prefix} {route}")).or_default().0 += count;
        }
        for (route, count) in theirs_counts.into_iter().flatten() {
            routes.entry(format!("{prefix} {route}")).or_default().1 += count;
        }
    }
    for (route, (a, b)) in routes {
        match theirs {
            Some(_) => println!("  {route:<34} {:>8.3} {:>8.3}", a as f64 / n, b as f64 / n),
            None => println!("  {route:<34} {:>8.3}", a as f64 / n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stat line whose command name holds spaces and parentheses, with utime 7, stime 5,
    /// cutime 3, cstime 2 and parent 41.
    const STAT: &str = "1234 (tokio (rt) x) S 41 1234 1234 0 -1 4194560 100 0 0 0 7 5 3 2 20 0 \
                        9 0 555 1000000 300 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 \
                        1 0 0 0 0 0";

    #[test]
    fn the_parent_and_cpu_are_read_after_the_last_parenthesis() {
        assert_eq!(parent_in(STAT), Some(41));
        assert_eq!(cpu_in(STAT).ok(), Some(7 + 5 + 3 + 2));
        assert!(cpu_in("1 (short) S 0 1").is_err());
        assert_eq!(parent_in("garbage"), None);
    }

    #[tokio::test]
    async fn a_processs_tree_holds_its_children_and_their_memory() -> Result<()> {
        // `sh -c 'cat'`: a child with a grandchild, both waiting on the pipe until it closes.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "cat; :"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()?;
        let me = std::process::id();
        let sh = child.id();
        let grandchild = scaleset_eventually::eventually("sh started cat", || async {
            descendants(sh).ok().and_then(|d| d.first().copied())
        })
        .await;
        let mine = descendants(me)?;
        assert!(mine.contains(&sh) && mine.contains(&grandchild), "{mine:?}");
        assert_eq!(tree_rss_kib(grandchild)?, rss_kib(grandchild)?, "a leaf");
        assert!(tree_rss_kib(sh)? >= rss_kib(grandchild)?);
        assert!(tree_cpu_ticks(me)? >= tree_cpu_ticks(grandchild)?);
        drop(child.stdin.take());
        child.wait()?;
        Ok(())
    }

    #[test]
    fn the_recording_providers_calls_are_counted_by_command() {
        let counts =
            count_commands("ListInstances acme_1 \nListInstances acme_2 \nGetVersion  \n\n");
        assert_eq!(
            counts,
            BTreeMap::from([("GetVersion".into(), 1), ("ListInstances".into(), 2)])
        );
    }

    #[test]
    fn the_generated_worker_configuration_declares_every_set() {
        let env = BenchEnv {
            github_url: "http://127.0.0.1:1".into(),
            api_url: "http://127.0.0.1:1/api/v3".into(),
            token: TOKEN.into(),
            org: VS_ORG.into(),
            sets: 3,
            provider: "/p".into(),
            provider_config: "/p.conf".into(),
            dir: "/scratch".into(),
            control_url: "http://127.0.0.1:1/_sim".into(),
        };
        let text = env.worker_config("3f2a9c1e-77b0-4d4e-9a55-0000000bec00");
        // That the worker accepts it is shown by every run of the mode; here, that it declares
        // what the side was told.
        assert_eq!(text.matches("[[scale_set]]").count(), 3);
        assert!(text.contains("name = \"bench-00002\""), "{text}");
        assert_eq!(
            text.matches(&format!("organization = \"{VS_ORG}\""))
                .count(),
            3
        );
        assert!(text.contains("executable = \"/p\""), "{text}");
        assert!(
            text.contains("url = \"sqlite:///scratch/scaleset.db\""),
            "{text}"
        );
    }
}
