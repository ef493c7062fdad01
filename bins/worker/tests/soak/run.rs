//! One soak: the simulator and the real worker processes, the seeded schedule played against
//! them while jobs arrive, then quiescence (faults off, every process running, a bounded
//! settle) and the invariants of [`crate::check`] over what is left.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use scaleset_sim::{AssignmentMode, Burst, Faults, JobSpec, RateLimit, StateSnapshot};
use scaleset_store::test_util::test_key;
use scaleset_store::{
    DatabaseUrl, DieselStore, EventStore as _, Keyring, ScaleSetStore as _, StoreOptions,
};

use crate::check::{
    self, Act, Acted, Convergence, GitHubSet, Healed, Job, Observed, Recoveries, StoredSet,
    Takeovers,
};
use crate::helpers::{
    CONTROLLER, PgDatabase, RunningSim, Site, Worker, eventually, worker_env_with,
};
use crate::link::{Fault, Link};
use crate::schedule::{Action, Backend, LinkTo, Rng, Step, plan};

/// Our scale sets.
const SETS: [&str; 2] = ["linux", "arm"];

/// The foreign controller's id, owner name and scale set.
const FOREIGN_CONTROLLER: &str = "9d1c7e55-0b6a-4f7e-8c33-fedcba987654";
const FOREIGN_OWNER: &str = "scaleset-9d1c7e55-0b6a-4f7e-8c33-fedcba987654";
const FOREIGN_SET: &str = "theirs";

/// What one soak is asked to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) seed: u64,
    pub(crate) seconds: u64,
    pub(crate) backend: Backend,
    /// How long quiescence may take before the invariants are checked anyway.
    pub(crate) settle: Duration,
    /// Whether the schedule partitions the workers' links (each worker then reaches
    /// PostgreSQL and the simulator through proxies of its own, `link.rs`).
    pub(crate) partitions: bool,
}

/// The lease TTL of the workers on PostgreSQL (`Site::postgres`).
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(3);

/// How long after another worker opened its session on a scale set a worker cut off from its
/// lease may still be seen creating runners or acquiring jobs there, beyond [`LEASE_TTL`]: a
/// request sent just before the fence, held in a partition's proxy and delivered at the heal,
/// lands late; the slowest partition's latency (1.5 s a chunk) and a loaded machine's
/// scheduling fit in 5 s.
pub(crate) const TAKEOVER_BOUND: Duration = Duration::from_secs(5);

/// How long after each heal (a partition's, and the last one: quiescence) a partition soak
/// must have converged: every scale set of ours on GitHub once, with a session, and every job
/// waiting at the heal started (the cut-off worker's sets served by someone). The other
/// faults go on after a heal in the chaos, so the bound covers the slowest start the soak has
/// seen under them (a job's wait, up to about 35 s on a loaded machine) with room.
pub(crate) const CONVERGE_BOUND: Duration = Duration::from_secs(90);

/// How long after its start a worker that exits 1 while its database is out of reach counts
/// as refused to start (docs/operations.md: it cannot start without its database), not as a
/// worker that died by itself.
const START_WINDOW: Duration = Duration::from_secs(30);

/// How long a supervisor (systemd's `RestartSec`, Kubernetes' back-off) waits before it starts
/// a worker that refused to start again.
const RESTART_BACKOFF: Duration = Duration::from_secs(2);

/// The loopback address worker `index` reaches the simulator from in a partition soak.
fn worker_source(index: usize) -> std::net::IpAddr {
    std::net::IpAddr::from([127, 0, 0, 10 + u8::try_from(index).unwrap_or(0)])
}

/// The figures of one soak.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    pub(crate) jobs_enqueued: usize,
    pub(crate) jobs_served: usize,
    pub(crate) faults: BTreeMap<&'static str, usize>,
    pub(crate) skipped: usize,
    pub(crate) kills: usize,
    pub(crate) wipes: usize,
    pub(crate) restarts: usize,
    /// Starts refused because the worker's database was out of reach, each followed by a
    /// supervisor's restart.
    pub(crate) refused_starts: usize,
    /// Stops abandoned at `worker.shutdown_timeout` (exit 3).
    pub(crate) abandoned_stops: usize,
    pub(crate) longest_wait: Duration,
    pub(crate) settled_in: Option<Duration>,
    pub(crate) instances_created: usize,
    /// Partition soaks: sessions the workers opened, takeovers among them, and the latest a
    /// worker created a runner or acquired a job after another had taken the set over.
    pub(crate) fence: Option<(usize, usize, Duration)>,
    /// Partition soaks: heals, how many converged, the median and the longest convergence.
    pub(crate) convergence: Option<(usize, usize, Duration, Duration)>,
}

/// The outcome of one soak: its figures, and what is wrong with the end state.
pub(crate) struct Report {
    pub(crate) settings: Settings,
    pub(crate) figures: Figures,
    pub(crate) violations: Vec<String>,
    pub(crate) schedule: Vec<Step>,
    pub(crate) history: Vec<String>,
    pub(crate) logs: String,
}

impl Report {
    /// The figures in one line per item.
    pub(crate) fn figures(&self) -> String {
        let f = &self.figures;
        let s = &self.settings;
        let mut out = format!(
            "soak seed {} ({:?}, {} s): {} jobs served of {} enqueued; {} kills, {} wipes, {} restarts, {} refused starts, {} stops abandoned; \
             longest job wait {:.1} s; {} instances created; settled in {}; {} actions skipped\n  faults injected:",
            s.seed,
            s.backend,
            s.seconds,
            f.jobs_served,
            f.jobs_enqueued,
            f.kills,
            f.wipes,
            f.restarts,
            f.refused_starts,
            f.abandoned_stops,
            f.longest_wait.as_secs_f64(),
            f.instances_created,
            f.settled_in.map_or_else(
                || "NOT settled".to_owned(),
                |d| format!("{:.1} s", d.as_secs_f64())
            ),
            f.skipped,
        );
        for (kind, n) in &f.faults {
            let _ = write!(out, " {kind} {n};");
        }
        if let Some((sessions, takeovers, latest)) = f.fence {
            let _ = write!(
                out,
                "\n  fence: {sessions} sessions opened, {takeovers} takeovers; latest act of a worker after another took its set over: {:.1} s",
                latest.as_secs_f64()
            );
        }
        if let Some((heals, converged, median, longest)) = f.convergence {
            let _ = write!(
                out,
                "\n  convergence: {heals} heals (the partitions healed and the quiescence), {converged} converged; median {:.1} s, longest {:.1} s (bound {CONVERGE_BOUND:?})",
                median.as_secs_f64(),
                longest.as_secs_f64()
            );
        }
        out
    }

    /// Everything needed to understand a violation: the seed, the schedule, the history.
    pub(crate) fn failure(&self) -> String {
        let mut out = format!(
            "CHAOS SOAK VIOLATION: seed {} ({:?}, {} s)\nrerun with SCALESET_SOAK_SEEDS={} SCALESET_SOAK_SECONDS={}\n\nviolations:\n",
            self.settings.seed,
            self.settings.backend,
            self.settings.seconds,
            self.settings.seed,
            self.settings.seconds
        );
        for v in &self.violations {
            let _ = writeln!(out, "  - {v}");
        }
        let _ = writeln!(out, "\n{}\n\nschedule:", self.figures());
        for step in &self.schedule {
            let _ = writeln!(out, "  {step}");
        }
        let _ = writeln!(out, "\nhistory:");
        for line in &self.history {
            let _ = writeln!(out, "  {line}");
        }
        let _ = writeln!(
            out,
            "\nworker logs (warnings and errors, last 60):\n{}",
            self.logs
        );
        out
    }
}

/// A worker slot: the process when it runs, and when it comes back or wakes.
struct Slot {
    /// Its configuration file (its own in a partition soak: it names its proxies).
    config: PathBuf,
    env: Vec<(&'static str, String)>,
    worker: Option<Worker>,
    /// When its process started.
    started: Option<Instant>,
    /// Until when its database link was last cut (partition soaks).
    database_cut_until: Option<Instant>,
    restart_at: Option<Instant>,
    wake_at: Option<Instant>,
    /// Log lines of this slot's earlier processes.
    old_logs: Vec<String>,
}

impl Slot {
    fn retire(&mut self, worker: &Worker) {
        self.old_logs.extend(worker.log_lines());
    }
}

/// A timed undo: a fault window that closes.
enum Undo {
    Latency,
    ProviderFails,
    ProviderSlow,
    Heal { worker: usize, link: LinkTo },
}

/// A heal the fleet must converge after: what healed, when, and the jobs then waiting.
struct Healing {
    what: String,
    at: Instant,
    waiting: Vec<i64>,
    took: Option<Duration>,
}

/// A worker's proxied links in a partition soak.
struct Links {
    database: Option<Link>,
    github: Link,
}

impl Links {
    fn get(&self, link: LinkTo) -> Option<&Link> {
        match link {
            LinkTo::Database => self.database.as_ref(),
            LinkTo::GitHub => Some(&self.github),
        }
    }
}

struct Soak<'a> {
    sim: &'a RunningSim,
    site: &'a Site,
    db: Option<&'a PgDatabase>,
    slots: Vec<Slot>,
    /// Each worker's links (empty unless partitions are on).
    links: Vec<Links>,
    start: Instant,
    rng: Rng,
    history: Vec<String>,
    figures: Figures,
    undos: Vec<(Instant, Undo)>,
    /// Enqueue instant of every job (runner request id), and when it first ran.
    enqueued_at: BTreeMap<i64, Instant>,
    started_at: BTreeMap<i64, Instant>,
    /// Jobs enqueued per GitHub scale-set id.
    jobs_by_set: BTreeMap<i64, Vec<i64>>,
    our_ids: BTreeSet<i64>,
    lost: usize,
    runners_killed: usize,
    last_wipe: Option<Instant>,
    /// When the database's connections were last cut.
    last_db_cut: Option<Instant>,
    deleted_at: Vec<(Instant, String)>,
    /// Every out-of-band delete: name and GitHub id.
    deleted_ids: Vec<(String, i64)>,
    /// Every partition healed, and whether the fleet converged after it.
    heals: Vec<Healing>,
}

impl Soak<'_> {
    fn log(&mut self, what: impl std::fmt::Display) {
        let line = format!("{:>7.1}s  {what}", self.start.elapsed().as_secs_f64());
        if std::env::var_os("SCALESET_SOAK_VERBOSE").is_some() {
            eprintln!("soak: {line}");
        }
        self.history.push(line);
    }

    fn spawn(&mut self, index: usize) {
        let worker = Worker::spawn(&self.slots[index].config, &self.slots[index].env);
        let pid = worker.pid();
        self.slots[index].worker = Some(worker);
        self.slots[index].started = Some(Instant::now());
        self.slots[index].restart_at = None;
        self.log(format!("worker {index} started (pid {pid})"));
    }

    /// The worker of slot `index` if it runs and is not paused.
    fn awake(&self, index: usize) -> bool {
        let slot = &self.slots[index];
        slot.worker.is_some() && slot.wake_at.is_none()
    }

    async fn kill9(&mut self, index: usize) {
        if let Some(worker) = self.slots[index].worker.take() {
            self.slots[index].retire(&worker);
            let _ = worker.signal_and_wait(Signal::SIGKILL).await;
        }
    }

    fn scale_set_id(&self, set: usize) -> Option<i64> {
        self.sim.scale_set_id(SETS[set])
    }

    async fn apply(&mut self, action: &Action) {
        let kind = action.kind();
        let done = match *action {
            Action::Jobs {
                set,
                count,
                run_secs,
            } => {
                let Some(id) = self.scale_set_id(set) else {
                    self.log(format!(
                        "no scale set {} on GitHub: jobs not enqueued",
                        SETS[set]
                    ));
                    self.figures.skipped += 1;
                    return;
                };
                let spec = JobSpec {
                    count,
                    run_seconds: Some(f64::from(run_secs)),
                    ..JobSpec::default()
                };
                match self.sim.sim.enqueue_jobs(id, &spec) {
                    Ok(ids) => {
                        let now = Instant::now();
                        self.our_ids.insert(id);
                        for job in &ids {
                            self.enqueued_at.insert(*job, now);
                        }
                        self.jobs_by_set.entry(id).or_default().extend(&ids);
                        self.figures.jobs_enqueued += ids.len();
                        self.log(format!("{count} jobs for {} (id {id}): {ids:?}", SETS[set]));
                    }
                    Err(e) => {
                        self.log(format!("enqueue for {} failed: {e}", SETS[set]));
                        self.figures.skipped += 1;
                    }
                }
                return;
            }
            Action::ServerErrors { remaining, status } => {
                self.sim
                    .sim
                    .update_faults(|f| f.server_errors = Some(Burst::new(remaining, status)));
                true
            }
            Action::RateLimit { remaining } => {
                self.sim
                    .sim
                    .update_faults(|f| f.rate_limit = Some(RateLimit::new(remaining, 1)));
                true
            }
            Action::CommitThenFail { endpoint } => {
                self.sim
                    .sim
                    .update_faults(|f| f.commit_then_fail = Some(Burst::new(1, 500).on(endpoint)));
                true
            }
            Action::Goaway { count } => {
                self.sim.sim.update_faults(|f| f.goaway += count);
                true
            }
            Action::Latency { ms, for_ms } => {
                self.sim.sim.update_faults(|f| f.latency_ms = ms);
                self.undos.push((
                    Instant::now() + Duration::from_millis(for_ms),
                    Undo::Latency,
                ));
                true
            }
            Action::EvictSession { set } => self
                .scale_set_id(set)
                .is_some_and(|id| self.sim.sim.evict_session(id).is_ok()),
            Action::TokenExpiry => {
                self.sim.sim.advance(Duration::from_secs(3600));
                true
            }
            Action::DeleteScaleSet { set } => match self.scale_set_id(set) {
                Some(id) if self.sim.sim.delete_scale_set(id).is_ok() => {
                    let lost = self.jobs_by_set.get(&id).map_or(0, Vec::len);
                    self.lost += lost;
                    self.deleted_at.push((Instant::now(), SETS[set].to_owned()));
                    self.deleted_ids.push((SETS[set].to_owned(), id));
                    self.log(format!("{} (id {id}) deleted with {lost} jobs", SETS[set]));
                    true
                }
                _ => false,
            },
            Action::DisconnectRunner => {
                let state = self.sim.sim.state();
                let idle: Vec<_> = state
                    .agents
                    .iter()
                    .filter(|a| self.our_ids.contains(&a.scale_set_id) && a.status == "idle")
                    .collect();
                if idle.is_empty() {
                    false
                } else {
                    let agent = idle[self.rng.index(idle.len())];
                    let ok = self.sim.sim.disconnect_runner(agent.id).is_ok();
                    if ok {
                        self.runners_killed += 1;
                        self.log(format!("runner {} went offline", agent.name));
                    }
                    ok
                }
            }
            Action::ProviderFails { for_ms } => {
                let path = self.site.cloud().join(scaleset_provider::FAIL_CREATES);
                let ok = std::fs::write(path, "").is_ok();
                self.undos.push((
                    Instant::now() + Duration::from_millis(for_ms),
                    Undo::ProviderFails,
                ));
                ok
            }
            Action::ProviderSlow { ms, for_ms } => {
                let path = self.site.cloud().join(scaleset_provider::SLOW_CREATES);
                let ok = std::fs::write(path, ms.to_string()).is_ok();
                self.undos.push((
                    Instant::now() + Duration::from_millis(for_ms),
                    Undo::ProviderSlow,
                ));
                ok
            }
            Action::Kill { worker, down_ms } => {
                if self.awake(worker) {
                    self.kill9(worker).await;
                    self.slots[worker].restart_at =
                        Some(Instant::now() + Duration::from_millis(down_ms));
                    self.figures.kills += 1;
                    true
                } else {
                    false
                }
            }
            Action::Pause { worker, for_ms } => match &self.slots[worker].worker {
                Some(w) if self.slots[worker].wake_at.is_none() => {
                    let ok = kill(w.pid(), Signal::SIGSTOP).is_ok();
                    self.slots[worker].wake_at =
                        Some(Instant::now() + Duration::from_millis(for_ms));
                    ok
                }
                _ => false,
            },
            Action::Restart { worker } => {
                if self.awake(worker) {
                    let Some(w) = self.slots[worker].worker.take() else {
                        return;
                    };
                    self.slots[worker].retire(&w);
                    let code = w.signal_and_wait(Signal::SIGTERM).await;
                    self.log(format!("worker {worker} exited {code:?} on SIGTERM"));
                    match code {
                        Some(0) => {}
                        // A stop abandoned at `worker.shutdown_timeout` (exit 3, docs/cli.md):
                        // its calls hung on a cut link; its leases expire and another worker
                        // takes its sets over, which the fence checks hold it to. Before exit 3
                        // existed such a stop exited 0 and was accepted the same.
                        Some(3) => self.figures.abandoned_stops += 1,
                        // Still starting, its database out of reach: it could not start.
                        Some(1) if self.database_out_of_reach_at_start(worker, Instant::now()) => {
                            self.figures.refused_starts += 1;
                        }
                        _ => self.history.push(format!(
                            "VIOLATION: worker {worker} exited {code:?} on SIGTERM"
                        )),
                    }
                    self.figures.restarts += 1;
                    self.spawn(worker);
                    true
                } else {
                    false
                }
            }
            Action::Wipe { down_ms } => {
                if self.awake(0) {
                    self.kill9(0).await;
                    self.site.wipe_database();
                    self.slots[0].restart_at =
                        Some(Instant::now() + Duration::from_millis(down_ms));
                    self.figures.wipes += 1;
                    self.figures.kills += 1;
                    self.last_wipe = Some(Instant::now());
                    true
                } else {
                    false
                }
            }
            Action::Partition {
                worker,
                link,
                fault,
                for_ms,
            } => match self.links.get(worker).and_then(|l| l.get(link)) {
                Some(proxy) if proxy.fault() == Fault::Pass => {
                    proxy.set(fault);
                    if link == LinkTo::Database {
                        self.slots[worker].database_cut_until =
                            Some(Instant::now() + Duration::from_millis(for_ms));
                    }
                    self.undos.push((
                        Instant::now() + Duration::from_millis(for_ms),
                        Undo::Heal { worker, link },
                    ));
                    true
                }
                // Already cut (or no such link): one fault per link at a time.
                _ => false,
            },
            Action::CutDatabase => match self.db {
                Some(db) => match cut_connections(&db.url).await {
                    Ok(n) => {
                        self.last_db_cut = Some(Instant::now());
                        self.log(format!("{n} database connections terminated"));
                        true
                    }
                    Err(e) => {
                        self.log(format!("cutting the database connections failed: {e}"));
                        false
                    }
                },
                None => false,
            },
        };
        if done {
            *self.figures.faults.entry(kind).or_default() += 1;
            self.log(format!("{action:?}"));
        } else {
            self.figures.skipped += 1;
            self.log(format!("skipped (nothing to act on): {action:?}"));
        }
    }

    /// Closes due fault windows, wakes paused workers, starts killed ones whose time came.
    fn timers(&mut self, now: Instant) {
        let (due, rest): (Vec<_>, Vec<_>) = self.undos.drain(..).partition(|(at, _)| *at <= now);
        self.undos = rest;
        for (_, undo) in due {
            self.undo(&undo);
        }
        for index in 0..self.slots.len() {
            // A worker that ended without being told to is a failure of its own (the start-up
            // apply race of seed 14 showed only at the next SIGTERM before this).
            if let Some(w) = self.slots[index].worker.as_mut()
                && let Ok(Some(status)) = w.child.try_wait()
            {
                if let Some(w) = self.slots[index].worker.take() {
                    self.slots[index].retire(&w);
                }
                let at = self.start.elapsed().as_secs_f64();
                if status.code() == Some(1) && self.database_out_of_reach_at_start(index, now) {
                    self.figures.refused_starts += 1;
                    self.log(format!(
                        "worker {index} refused to start ({status}): its database was out of reach; \
                         restarted in {} s, as a supervisor would",
                        RESTART_BACKOFF.as_secs()
                    ));
                    self.slots[index].restart_at = Some(now + RESTART_BACKOFF);
                } else {
                    self.history.push(format!(
                        "VIOLATION: worker {index} exited by itself ({status}) at {at:.1}s"
                    ));
                    self.slots[index].restart_at = Some(now);
                }
            }
            if self.slots[index].wake_at.is_some_and(|at| at <= now) {
                self.wake(index);
            }
            if self.slots[index].worker.is_none()
                && self.slots[index].restart_at.is_some_and(|at| at <= now)
            {
                self.spawn(index);
            }
        }
    }

    /// Whether worker `index` was still starting when it exited and its database was out of
    /// reach meanwhile: its database link cut while it ran, or the database's connections cut
    /// since it started. The worker documents that it cannot start then (exit 1); a supervisor restarts
    /// it.
    fn database_out_of_reach_at_start(&self, index: usize, now: Instant) -> bool {
        let Some(started) = self.slots[index].started else {
            return false;
        };
        if now.duration_since(started) > START_WINDOW {
            return false;
        }
        // The link's own state too: on a loaded machine the harness may not have healed a
        // window that is already past its time.
        let link_cut = self.slots[index]
            .database_cut_until
            .is_some_and(|until| until >= started)
            || self
                .links
                .get(index)
                .and_then(|l| l.get(LinkTo::Database))
                .is_some_and(|proxy| proxy.fault() != Fault::Pass);
        let connections_cut = self.last_db_cut.is_some_and(|at| at >= started);
        link_cut || connections_cut
    }

    fn undo(&mut self, undo: &Undo) {
        match undo {
            Undo::Latency => {
                self.sim.sim.update_faults(|f| f.latency_ms = 0);
                self.log("latency off");
            }
            Undo::ProviderFails => {
                let _ =
                    std::fs::remove_file(self.site.cloud().join(scaleset_provider::FAIL_CREATES));
                self.log("provider creates again");
            }
            Undo::ProviderSlow => {
                let _ =
                    std::fs::remove_file(self.site.cloud().join(scaleset_provider::SLOW_CREATES));
                self.log("provider fast again");
            }
            Undo::Heal { worker, link } => {
                if let Some(proxy) = self.links.get(*worker).and_then(|l| l.get(*link)) {
                    proxy.set(Fault::Pass);
                }
                // Cut until now, not until the window's planned end: a loaded harness heals late,
                // and a worker started meanwhile met the cut link.
                if *link == LinkTo::Database
                    && let Some(slot) = self.slots.get_mut(*worker)
                {
                    slot.database_cut_until = Some(Instant::now());
                }
                let waiting = self
                    .enqueued_at
                    .keys()
                    .filter(|job| !self.started_at.contains_key(job))
                    .copied()
                    .collect();
                self.heals.push(Healing {
                    what: format!("worker {worker}'s {link:?} link"),
                    at: Instant::now(),
                    waiting,
                    took: None,
                });
                self.log(format!("worker {worker}'s {link:?} link healed"));
            }
        }
    }

    fn wake(&mut self, index: usize) {
        if let Some(w) = &self.slots[index].worker {
            let _ = kill(w.pid(), Signal::SIGCONT);
        }
        self.slots[index].wake_at = None;
        self.log(format!("worker {index} woken (SIGCONT)"));
    }

    /// Notes when each job first ran (for the longest wait).
    fn watch(&mut self, state: &StateSnapshot) {
        let now = Instant::now();
        for job in &state.jobs {
            if (job.state == "running" || job.state == "completed")
                && !self.started_at.contains_key(&job.runner_request_id)
                && self.enqueued_at.contains_key(&job.runner_request_id)
            {
                self.started_at.insert(job.runner_request_id, now);
            }
        }
    }

    /// Notes the heals after which the fleet has now converged: every scale set of ours on
    /// GitHub once with a session, and every job that waited at the heal started (or went with
    /// a scale set deleted out of band). Call after [`Self::watch`].
    fn converge(&mut self, state: &StateSnapshot) {
        let sessions = SETS.iter().all(|name| {
            let found: Vec<_> = state.scale_sets_named(name).collect();
            found.len() == 1 && found[0].session.is_some()
        });
        if !sessions {
            return;
        }
        let now = Instant::now();
        let on_github: BTreeSet<i64> = state.jobs.iter().map(|j| j.runner_request_id).collect();
        for heal in self.heals.iter_mut().filter(|h| h.took.is_none()) {
            let served = heal
                .waiting
                .iter()
                .all(|job| self.started_at.contains_key(job) || !on_github.contains(job));
            if served {
                heal.took = Some(now.duration_since(heal.at));
            }
        }
    }

    /// Faults off, every process running and awake.
    fn quiesce(&mut self, initial: &Faults) {
        self.sim.sim.set_faults(initial.clone());
        let undos: Vec<_> = self.undos.drain(..).map(|(_, u)| u).collect();
        for undo in &undos {
            self.undo(undo);
        }
        for index in 0..self.slots.len() {
            if self.slots[index].wake_at.is_some() {
                self.wake(index);
            }
            if self.slots[index].worker.is_none() {
                self.spawn(index);
            }
        }
        self.log("quiescence: faults off, every worker running");
    }

    /// Whether the world looks settled from GitHub's and the cloud's side.
    fn settled(&self, state: &StateSnapshot) -> bool {
        let live_jobs_done = state
            .jobs
            .iter()
            .filter(|j| self.enqueued_at.contains_key(&j.runner_request_id))
            .all(|j| j.state == "completed");
        let no_runners = !state
            .agents
            .iter()
            .any(|a| self.our_ids.contains(&a.scale_set_id) || self.is_ours(state, a.scale_set_id));
        let sessions = SETS.iter().all(|name| {
            let found: Vec<_> = state.scale_sets_named(name).collect();
            found.len() == 1 && found[0].session.is_some()
        });
        let leftovers = !our_instances(&self.site.cloud()).is_empty();
        live_jobs_done && no_runners && sessions && !leftovers
    }

    fn is_ours(&self, state: &StateSnapshot, id: i64) -> bool {
        state
            .scale_set(id)
            .is_some_and(|s| SETS.contains(&s.name.as_str()))
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for (index, slot) in self.slots.iter().enumerate() {
            let mut lines = slot.old_logs.clone();
            if let Some(w) = &slot.worker {
                lines.extend(w.log_lines());
            }
            let notable: Vec<_> = lines
                .iter()
                .filter(|l| l.contains("\"WARN\"") || l.contains("\"ERROR\""))
                .collect();
            let _ = writeln!(out, "worker {index}: {} notable lines", notable.len());
            for line in notable.iter().rev().take(60).rev() {
                let _ = writeln!(out, "  {line}");
            }
        }
        out
    }
}

/// Our controller's instance files still in the cloud directory: `(pool key, name)`.
fn our_instances(cloud: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(pools) = std::fs::read_dir(cloud) else {
        return out;
    };
    for pool in pools.flatten() {
        let key = pool.file_name().to_string_lossy().into_owned();
        if !key.starts_with(CONTROLLER) || !pool.path().is_dir() {
            continue;
        }
        for file in std::fs::read_dir(pool.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            out.push(format!("{key}/{}", file.file_name().to_string_lossy()));
        }
    }
    out.sort();
    out
}

/// Terminates every connection to the database at `url` but this one.
async fn cut_connections(url: &str) -> Result<usize, String> {
    use diesel::{Connection as _, RunQueryDsl as _};
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut conn = diesel::PgConnection::establish(&url).map_err(|e| e.to_string())?;
        diesel::sql_query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .execute(&mut conn)
        .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// The store's scale sets with their trails (oldest first).
async fn stored(url: &str) -> Result<Vec<StoredSet>, String> {
    stored_in(&open(url).await?).await
}

/// The store at `url`.
async fn open(url: &str) -> Result<DieselStore, String> {
    let url = DatabaseUrl::parse(url).map_err(|e| e.to_string())?;
    DieselStore::open(StoreOptions::new(url, Keyring::new(test_key("k1", 1))))
        .await
        .map_err(|e| e.to_string())
}

/// What `store` holds of every scale set, as the check reads it.
async fn stored_in(store: &DieselStore) -> Result<Vec<StoredSet>, String> {
    let mut out = Vec::new();
    for set in store
        .list_scale_sets(None)
        .await
        .map_err(|e| e.to_string())?
    {
        let mut trail: Vec<_> = store
            .list_events(set.id, 500)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|e| (e.kind.as_str().to_owned(), e.reason))
            .collect();
        trail.reverse();
        out.push(StoredSet {
            name: set.spec.name().to_string(),
            state: set.state.as_str().to_owned(),
            github_id: set.github_id,
            trail,
        });
    }
    Ok(out)
}

/// How long the store may take to follow GitHub's settled side before the check reads it.
const STORE_FOLLOWS: Duration = Duration::from_secs(30);

/// Whether every scale set of ours is stored `ready` with the id GitHub has for it: what the
/// check reads of the store.
async fn store_agrees(store: &DieselStore, github: &StateSnapshot) -> bool {
    let Ok(stored) = stored_in(store).await else {
        return false;
    };
    SETS.iter().all(|name| {
        let on_github = github
            .scale_sets
            .iter()
            .find(|s| s.name == *name)
            .map(|s| s.id);
        stored
            .iter()
            .any(|s| s.name == *name && s.state == "ready" && s.github_id == on_github)
    })
}

/// Adds `bootstrap_timeout` to every scale set of the site's configuration: a machine that
/// never registers (created just before a kill, say) is reaped within the settle time.
fn shorten_bootstrap(site: &Site) {
    let path = site.config();
    if let Ok(text) = std::fs::read_to_string(&path) {
        let text = text.replace(
            "max_runners = 10\n",
            "max_runners = 10\nbootstrap_timeout = \"15s\"\n",
        );
        let _ = std::fs::write(&path, text);
    }
}

/// Runs one soak; `None` when its backend is not available here (PostgreSQL unset).
#[allow(
    clippy::disallowed_methods,
    reason = "the chaos schedule runs on wall time: its ticks pace the faults and the settle"
)]
pub(crate) async fn soak(settings: Settings) -> Option<Report> {
    let db = match settings.backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(PgDatabase::for_test("the PostgreSQL chaos soak")?),
    };
    let assignment = if settings.seed.is_multiple_of(2) {
        AssignmentMode::AutoAssign
    } else {
        AssignmentMode::AvailableThenAcquire
    };
    let sim = RunningSim::start_with(|c| {
        c.assignment = assignment;
        // GitHub drops the session of a listener that stopped within about 5 minutes; without
        // that, a session left by a worker killed before it recorded the session (or by one
        // whose database was then wiped) would be held for ever, where GitHub frees it. The
        // settle phase moves simulated time on, so this passes within seconds there.
        c.session_expiry = Some(Duration::from_secs(300));
        // Every request of a long run is kept: the foreign-write check reads them all.
        c.request_log_capacity = 2_000_000;
    })
    .await;
    let site = match &db {
        None => Site::new(&sim, &SETS),
        Some(db) => Site::postgres(&sim, &SETS, &db.url),
    };
    shorten_bootstrap(&site);
    let workers = match settings.backend {
        Backend::Sqlite => 1,
        Backend::Postgres => 3,
    };
    let schedule = plan(
        settings.seed,
        settings.seconds,
        SETS.len(),
        workers,
        settings.backend,
        settings.partitions,
    );

    // The foreign controller: a scale set holding its own session, and a machine of its own in
    // the same cloud directory.
    let foreign = sim
        .sim
        .create_foreign_scale_set_with_labels(
            "acme",
            1,
            FOREIGN_SET,
            FOREIGN_OWNER,
            &[format!(
                "scaleset-owner-{}",
                FOREIGN_CONTROLLER.replace('-', "")
            )],
        )
        .expect("seed the foreign scale set");
    let foreign_pool = site
        .cloud()
        .join(format!("{FOREIGN_CONTROLLER}_{}", foreign.scale_set_id));
    std::fs::create_dir_all(&foreign_pool).expect("foreign pool");
    let foreign_instance: PathBuf = foreign_pool.join("theirs-0001.json");
    std::fs::write(&foreign_instance, r#"{"name":"theirs-0001"}"#).expect("foreign instance");
    let github_set = |s: &scaleset_sim::ScaleSetInfo| GitHubSet {
        id: s.id,
        name: s.name.clone(),
        labels: s.labels.clone(),
        session: s
            .session
            .as_ref()
            .map(|x| (x.session_id.clone(), x.owner_name.clone())),
    };
    let foreign_seeded = sim
        .sim
        .state()
        .scale_set(foreign.scale_set_id)
        .map(github_set);

    let names = ["worker-a", "worker-b", "worker-c"];
    let mut links = Vec::new();
    let mut configs = Vec::new();
    for index in 0..workers {
        if !settings.partitions {
            configs.push(site.config());
            continue;
        }
        let github = Link::start(sim.addr, Some(worker_source(index)))
            .await
            .expect("a proxy for the worker's GitHub link");
        let database = match &db {
            Some(db) => Some(
                Link::start(postgres_addr(&db.url), None)
                    .await
                    .expect("a proxy for the worker's database link"),
            ),
            None => None,
        };
        let config = site.dir.path().join(format!("worker-{index}.toml"));
        let text = std::fs::read_to_string(site.config()).expect("the site's configuration");
        std::fs::write(
            &config,
            proxied_config(
                &text,
                sim.addr,
                github.addr,
                db.as_ref().map(|d| d.url.as_str()),
                database.as_ref().map(|l| l.addr),
            ),
        )
        .expect("the worker's configuration");
        configs.push(config);
        links.push(Links { database, github });
    }
    let slots = (0..workers)
        .map(|i| Slot {
            config: configs[i].clone(),
            env: worker_env_with(&[("SCALESET_WORKER__NAME", names[i])]),
            worker: None,
            started: None,
            database_cut_until: None,
            restart_at: None,
            wake_at: None,
            old_logs: Vec::new(),
        })
        .collect();
    let initial = sim.sim.faults();
    let mut soak = Soak {
        sim: &sim,
        site: &site,
        db: db.as_ref(),
        slots,
        links,
        start: Instant::now(),
        rng: Rng::new(settings.seed ^ 0xA5A5_5A5A_DEAD_BEEF),
        history: Vec::new(),
        figures: Figures::default(),
        undos: Vec::new(),
        enqueued_at: BTreeMap::new(),
        started_at: BTreeMap::new(),
        jobs_by_set: BTreeMap::new(),
        our_ids: BTreeSet::new(),
        lost: 0,
        runners_killed: 0,
        last_wipe: None,
        last_db_cut: None,
        deleted_at: Vec::new(),
        deleted_ids: Vec::new(),
        heals: Vec::new(),
    };
    for index in 0..workers {
        soak.spawn(index);
    }
    sim.listening("the first scale set listens", SETS[0]).await;
    sim.listening("the second scale set listens", SETS[1]).await;
    soak.start = Instant::now();
    soak.log(format!("both scale sets listen; seed {}", settings.seed));

    let mut next = 0;
    let end = Duration::from_secs(settings.seconds);
    let mut polled = Instant::now();
    while soak.start.elapsed() < end {
        let now = Instant::now();
        while next < schedule.len() && schedule[next].at <= soak.start.elapsed() {
            let action = schedule[next].action.clone();
            soak.apply(&action).await;
            next += 1;
        }
        soak.timers(now);
        if polled.elapsed() >= Duration::from_millis(250) {
            let state = sim.sim.state();
            soak.watch(&state);
            soak.converge(&state);
            for s in &state.scale_sets {
                if SETS.contains(&s.name.as_str()) {
                    soak.our_ids.insert(s.id);
                }
            }
            polled = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    soak.quiesce(&initial);
    let chaos_ended = soak.start.elapsed();
    let settle_start = Instant::now();
    while settle_start.elapsed() < settings.settle {
        // Simulated time moves on so the runs of the jobs end; real time is what the workers'
        // leases and bootstrap timeouts run on.
        sim.sim.advance(Duration::from_secs(30));
        let state = sim.sim.state();
        soak.watch(&state);
        soak.converge(&state);
        for s in &state.scale_sets {
            if SETS.contains(&s.name.as_str()) {
                soak.our_ids.insert(s.id);
            }
        }
        if soak.settled(&state) {
            soak.figures.settled_in = Some(settle_start.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    soak.log(match soak.figures.settled_in {
        Some(d) => format!("settled after {:.1} s", d.as_secs_f64()),
        None => format!("NOT settled within {:?}", settings.settle),
    });
    let url = match &db {
        Some(db) => db.url.clone(),
        None => format!("sqlite://{}", site.db().display()),
    };
    if soak.figures.settled_in.is_some()
        && let Ok(store) = open(&url).await
    {
        // GitHub's side settled; the store follows within a reconcile interval (a scale set
        // is stored `ready` after its session opened). Wait for exactly what the check reads
        // of it, bounded: a store that never agrees is what the check then reports.
        let _agreed = tokio::time::timeout(
            STORE_FOLLOWS,
            eventually("the store agrees with GitHub", || async {
                store_agrees(&store, &sim.sim.state()).await.then_some(())
            }),
        )
        .await;
    }

    let state = sim.sim.state();
    let mut violations = Vec::new();
    let stored = match stored(&url).await {
        Ok(stored) => stored,
        Err(e) => {
            violations.push(format!("the store cannot be read: {e}"));
            Vec::new()
        }
    };
    let ledger =
        std::fs::read_to_string(site.cloud().join(scaleset_provider::LEDGER)).unwrap_or_default();
    let created: Vec<String> = ledger
        .lines()
        .filter(|l| l.starts_with(CONTROLLER))
        .map(|l| l.split_once(' ').map_or(l, |(_, name)| name).to_owned())
        .collect();
    let deleted_since_wipe = soak
        .deleted_at
        .iter()
        .filter(|(at, _)| soak.last_wipe.is_none_or(|w| *at > w))
        .map(|(_, name)| name.clone())
        .collect();
    let log = sim.sim.request_log();
    let observed = Observed {
        owner: format!("scaleset-{CONTROLLER}"),
        names: SETS.iter().map(|s| (*s).to_owned()).collect(),
        github: state.scale_sets.iter().map(github_set).collect(),
        our_ids: soak.our_ids.clone(),
        jobs: state
            .jobs
            .iter()
            .filter(|j| soak.enqueued_at.contains_key(&j.runner_request_id))
            .map(|j| Job {
                id: j.runner_request_id,
                scale_set: state
                    .scale_set(j.scale_set_id)
                    .map_or_else(|| j.scale_set_id.to_string(), |s| s.name.clone()),
                state: j.state.clone(),
                reassignments: j.reassignments,
                runner: j.runner_name.clone(),
            })
            .collect(),
        enqueued: soak.figures.jobs_enqueued,
        lost_with_deleted_sets: soak.lost,
        runners_killed: soak.runners_killed,
        created: created.clone(),
        instances_left: our_instances(&site.cloud()),
        runners_left: state
            .agents
            .iter()
            .filter(|a| soak.our_ids.contains(&a.scale_set_id))
            .map(|a| (a.scale_set_id, a.name.clone(), a.status.clone()))
            .collect(),
        foreign_seeded,
        foreign_instance_left: foreign_instance.exists(),
        foreign_writes: {
            let path = format!("/runnerscalesets/{}", foreign.scale_set_id);
            log.iter()
                .filter(|r| {
                    r.method != "GET"
                        && r.path
                            .split_once(&path)
                            .is_some_and(|(_, rest)| rest.is_empty() || rest.starts_with('/'))
                })
                .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
                .collect()
        },
        stored,
        recoveries: Recoveries {
            wiped: soak.last_wipe.is_some(),
            deleted_since_wipe,
            deleted: soak.deleted_ids.clone(),
        },
        scale_sets_created: log
            .iter()
            .filter_map(|r| scale_set_in_path(&r.path))
            .filter(|id| *id != foreign.scale_set_id)
            .collect::<BTreeSet<_>>()
            .len(),
        takeovers: if settings.partitions {
            Takeovers {
                acts: log
                    .iter()
                    .filter_map(|r| act_of(r, workers))
                    .filter(|a| a.scale_set != foreign.scale_set_id)
                    .collect(),
                ttl: LEASE_TTL,
                bound: TAKEOVER_BOUND,
            }
        } else {
            Takeovers::default()
        },
        convergence: settings.partitions.then(|| Convergence {
            heals: soak
                .heals
                .iter()
                .map(|h| Healed {
                    what: h.what.clone(),
                    at: h.at.duration_since(soak.start),
                    took: h.took,
                })
                // The last heal: every fault off; settled is the stronger test (nothing of
                // ours left over either).
                .chain([Healed {
                    what: "the quiescence (every fault off)".to_owned(),
                    at: chaos_ended,
                    took: soak.figures.settled_in,
                }])
                .collect(),
            bound: CONVERGE_BOUND,
        }),
    };
    violations.extend(check::violations(&observed));
    violations.extend(
        soak.history
            .iter()
            .filter(|l| l.starts_with("VIOLATION"))
            .cloned(),
    );
    soak.figures.jobs_served = observed
        .jobs
        .iter()
        .filter(|j| j.state == "completed")
        .count();
    soak.figures.instances_created = created.len();
    if settings.partitions {
        soak.figures.fence = Some(check::takeover_figures(&observed.takeovers));
        if let Some(c) = &observed.convergence {
            let (converged, median, longest) = c.figures();
            soak.figures.convergence = Some((c.heals.len(), converged, median, longest));
        }
    }
    soak.figures.longest_wait = soak
        .enqueued_at
        .iter()
        .filter_map(|(job, at)| soak.started_at.get(job).map(|s| s.duration_since(*at)))
        .max()
        .unwrap_or_default();
    if violations.is_empty() {
        // The trails are part of the history only when something is wrong.
    } else {
        if settings.partitions {
            soak.log("what each worker did on our scale sets, as GitHub saw it (simulator time):");
            for act in &observed.takeovers.acts {
                soak.log(format!(
                    "    {:>7.1}s  worker {} {:?} on scale set {}",
                    act.at_ms as f64 / 1000.0,
                    act.worker,
                    act.what,
                    act.scale_set
                ));
            }
        }
        for set in &observed.stored {
            soak.log(format!("trail of {}:", set.name));
            for (kind, reason) in &set.trail {
                soak.log(format!("    {kind}: {reason}"));
            }
        }
    }

    // Clean shutdown: every worker exits 0 on SIGTERM and deletes its sessions.
    for index in 0..soak.slots.len() {
        if let Some(w) = soak.slots[index].worker.take() {
            soak.slots[index].retire(&w);
            let code = w.signal_and_wait(Signal::SIGTERM).await;
            if code != Some(0) {
                violations.push(format!(
                    "worker {index} exited {code:?} on the final SIGTERM"
                ));
            }
        }
    }
    let logs = soak.logs();
    Some(Report {
        settings,
        figures: soak.figures,
        violations,
        schedule,
        history: soak.history,
        logs,
    })
}

/// The address of the PostgreSQL server in `url` (the soak's is on loopback).
fn postgres_addr(url: &str) -> SocketAddr {
    let parsed = url::Url::parse(url).expect("the database URL");
    let host = parsed.host_str().unwrap_or("127.0.0.1");
    let port = parsed.port().unwrap_or(5432);
    format!("{host}:{port}").parse().unwrap_or_else(|e| {
        panic!("the PostgreSQL host of the soak is an IP address ({host}): {e}")
    })
}

/// The site's configuration `text` with the credentials' GitHub URLs pointing at `github`
/// (the worker's proxy to the simulator at `sim`) and the database URL at `database`. The fake
/// provider's `simulator_url` stays: the runner machines reach GitHub on their own, not
/// through the worker.
fn proxied_config(
    text: &str,
    sim: SocketAddr,
    github: SocketAddr,
    db_url: Option<&str>,
    database: Option<SocketAddr>,
) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = if line.starts_with("base_url =") || line.starts_with("api_base_url =") {
            line.replace(&sim.to_string(), &github.to_string())
        } else if let (Some(url), Some(proxy)) = (db_url, database)
            && line == format!("url = \"{url}\"")
        {
            let mut proxied = url::Url::parse(url).expect("the database URL");
            let _ = proxied.set_ip_host(proxy.ip());
            let _ = proxied.set_port(Some(proxy.port()));
            format!("url = \"{proxied}\"")
        } else {
            line.to_owned()
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The GitHub scale-set id a request's path names (`…/runnerscalesets/{id}[/…]`).
fn scale_set_in_path(path: &str) -> Option<i64> {
    let (_, rest) = path.split_once("/runnerscalesets/")?;
    rest.split('/').next()?.parse().ok()
}

/// What a successful request of one of `workers` workers (told apart by its loopback source
/// address, [`worker_source`]) did on a scale set, if it is one the fence is about.
fn act_of(record: &scaleset_sim::RequestRecord, workers: usize) -> Option<Act> {
    if !(200..300).contains(&record.status) {
        return None;
    }
    let what = match record.endpoint.as_str() {
        "create_session" => Acted::SessionOpened,
        "generate_jit_config" => Acted::RunnerCreated,
        "acquire_jobs" => Acted::JobsAcquired,
        _ => return None,
    };
    let peer: SocketAddr = record.peer.as_deref()?.parse().ok()?;
    let worker = (0..workers).find(|i| worker_source(*i) == peer.ip())?;
    Some(Act {
        at_ms: record.at_ms,
        worker,
        scale_set: scale_set_in_path(&record.path)?,
        what,
    })
}
