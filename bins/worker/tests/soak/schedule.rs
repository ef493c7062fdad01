//! The seeded schedule: a small PRNG and the list of timed actions one seed gives. Pure: the
//! same seed, duration and backend always give the same schedule (tested below), so a
//! violation's seed replays the same faults, kills and jobs in the same order at the same
//! offsets. What the processes make of them under a loaded machine is not replayable, which is
//! why a violation prints the history that was observed too.

use std::fmt;
use std::time::Duration;

use crate::link::{Direction, Fault};

/// SplitMix64 (Steele, Lea and Flood): a tiny, well-mixed generator, ample for a schedule and
/// no new dependency.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// An index below `n`.
    pub(crate) fn index(&mut self, n: usize) -> usize {
        usize::try_from(self.next_u64() % n as u64).unwrap_or(0)
    }
}

/// Which database the workers share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// One worker on a SQLite file (wipes delete the file).
    Sqlite,
    /// Three workers on one PostgreSQL database (cuts terminate their connections).
    Postgres,
}

/// Which of a worker's links a partition cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkTo {
    /// The worker's connections to PostgreSQL.
    Database,
    /// The worker's connections to GitHub (the simulator).
    GitHub,
}

/// One thing the harness does to the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// `count` jobs for scale set `set`, each running `run_secs` simulated seconds.
    Jobs {
        set: usize,
        count: u32,
        run_secs: u32,
    },
    /// The next `remaining` GitHub requests answer `status`.
    ServerErrors { remaining: u32, status: u16 },
    /// The next `remaining` requests answer 429 with `Retry-After: 1`.
    RateLimit { remaining: u32 },
    /// The next POST to `endpoint` acts, then answers 500.
    CommitThenFail { endpoint: &'static str },
    /// The next `count` held polls close their connection (GOAWAY).
    Goaway { count: u32 },
    /// Every request delayed `ms` for `for_ms`.
    Latency { ms: u64, for_ms: u64 },
    /// The scale set's session vanishes on GitHub.
    EvictSession { set: usize },
    /// Simulated time jumps an hour: every token expires (and running jobs end).
    TokenExpiry,
    /// The scale set is deleted on GitHub behind our back, with its jobs and runners.
    DeleteScaleSet { set: usize },
    /// An idle runner of ours goes offline: its machine died before it took a job.
    DisconnectRunner,
    /// The provider refuses every create for `for_ms`.
    ProviderFails { for_ms: u64 },
    /// The provider takes `ms` for every create, for `for_ms`.
    ProviderSlow { ms: u64, for_ms: u64 },
    /// kill -9 of a worker, started again after `down_ms`.
    Kill { worker: usize, down_ms: u64 },
    /// SIGSTOP of a worker, SIGCONT after `for_ms`.
    Pause { worker: usize, for_ms: u64 },
    /// SIGTERM of a worker, waited for, started again at once.
    Restart { worker: usize },
    /// SQLite: the worker killed, its database file and WAL deleted, the worker started again
    /// after `down_ms` on an empty database.
    Wipe { down_ms: u64 },
    /// PostgreSQL: every connection of the workers to their database terminated
    /// (`pg_terminate_backend`), the stand-in for a database restart on a shared server.
    CutDatabase,
    /// A network partition: the worker's link `link` under `fault` (its proxy), healed after
    /// `for_ms`; both sides keep running. Only in a partition soak.
    Partition {
        worker: usize,
        link: LinkTo,
        fault: Fault,
        for_ms: u64,
    },
}

impl Action {
    /// The name figures and reports count it under.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Jobs { .. } => "jobs",
            Self::ServerErrors { .. } => "5xx burst",
            Self::RateLimit { .. } => "429 burst",
            Self::CommitThenFail { .. } => "commit then fail",
            Self::Goaway { .. } => "goaway",
            Self::Latency { .. } => "latency",
            Self::EvictSession { .. } => "session evicted",
            Self::TokenExpiry => "token expiry",
            Self::DeleteScaleSet { .. } => "scale set deleted out of band",
            Self::DisconnectRunner => "runner died",
            Self::ProviderFails { .. } => "provider fails",
            Self::ProviderSlow { .. } => "provider hangs",
            Self::Kill { .. } => "kill -9",
            Self::Pause { .. } => "SIGSTOP/SIGCONT",
            Self::Restart { .. } => "SIGTERM and restart",
            Self::Wipe { .. } => "database wiped",
            Self::CutDatabase => "database connections cut",
            Self::Partition { link, fault, .. } => partition_kind(*link, *fault),
        }
    }
}

/// The name a partition counts under: the link and the fault.
fn partition_kind(link: LinkTo, fault: Fault) -> &'static str {
    match (link, fault) {
        (LinkTo::Database, Fault::Drop) => "partition: database drop",
        (LinkTo::Database, Fault::Reject) => "partition: database reject",
        (LinkTo::Database, Fault::Slow { .. }) => "partition: database slow",
        (LinkTo::Database, Fault::OneWay(Direction::Up)) => "partition: database one-way (up held)",
        (LinkTo::Database, Fault::OneWay(Direction::Down)) => {
            "partition: database one-way (down held)"
        }
        (LinkTo::GitHub, Fault::Drop) => "partition: github drop",
        (LinkTo::GitHub, Fault::Reject) => "partition: github reject",
        (LinkTo::GitHub, Fault::Slow { .. }) => "partition: github slow",
        (LinkTo::GitHub, Fault::OneWay(Direction::Up)) => "partition: github one-way (up held)",
        (LinkTo::GitHub, Fault::OneWay(Direction::Down)) => "partition: github one-way (down held)",
        (_, Fault::Pass) => "partition: none",
    }
}

/// A partition of one of `workers`' links (the database link only on PostgreSQL), healed
/// after 1 to 12 s: often beyond the soak's 3 s lease TTL, so another worker takes its sets.
fn partition(rng: &mut Rng, workers: usize, backend: Backend) -> Action {
    let worker = rng.index(workers);
    let link = match backend {
        Backend::Postgres if rng.range(0, 1) == 0 => LinkTo::Database,
        Backend::Postgres | Backend::Sqlite => LinkTo::GitHub,
    };
    let fault = match rng.range(0, 4) {
        0 => Fault::Drop,
        1 => Fault::Reject,
        2 => Fault::Slow {
            latency_ms: rng.range(100, 1500),
            bytes_per_sec: rng.range(2_000, 200_000),
        },
        3 => Fault::OneWay(Direction::Up),
        _ => Fault::OneWay(Direction::Down),
    };
    Action::Partition {
        worker,
        link,
        fault,
        for_ms: rng.range(1000, 12_000),
    }
}

/// An action at an offset from the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) at: Duration,
    pub(crate) action: Action,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>7.1}s  {:?}", self.at.as_secs_f64(), self.action)
    }
}

/// The POSTs a commit-then-fail hits: the create of a scale set, a session, a runner's JIT
/// config (each must be looked up again, not repeated blindly).
const COMMIT_ENDPOINTS: [&str; 3] = ["create_scale_set", "create_session", "generate_jit_config"];

/// The schedule of `seed` for a run of `seconds` over `sets` scale sets and `workers` workers on
/// `backend`: an action every 0.3 to 2.5 s, jobs about half the time. With `partitions`, about
/// a third of the actions are network partitions instead (a schedule without them is the same
/// as before they existed: the draw for one is made only in a partition soak).
pub(crate) fn plan(
    seed: u64,
    seconds: u64,
    sets: usize,
    workers: usize,
    backend: Backend,
    partitions: bool,
) -> Vec<Step> {
    let mut rng = Rng::new(seed);
    let mut steps = Vec::new();
    let end = Duration::from_secs(seconds);
    let mut at = Duration::from_millis(rng.range(300, 1500));
    while at < end {
        if partitions && rng.range(0, 99) < 33 {
            steps.push(Step {
                at,
                action: partition(&mut rng, workers, backend),
            });
            at += Duration::from_millis(rng.range(300, 2500));
            continue;
        }
        let action = match rng.range(0, 99) {
            0..=47 => Action::Jobs {
                set: rng.index(sets),
                count: u32::try_from(rng.range(1, 3)).unwrap_or(1),
                run_secs: u32::try_from(rng.range(1, 8)).unwrap_or(1),
            },
            48..=51 => Action::ServerErrors {
                remaining: u32::try_from(rng.range(1, 6)).unwrap_or(1),
                status: [500, 502, 503][rng.index(3)],
            },
            52..=54 => Action::RateLimit {
                remaining: u32::try_from(rng.range(1, 3)).unwrap_or(1),
            },
            55..=57 => Action::CommitThenFail {
                endpoint: COMMIT_ENDPOINTS[rng.index(COMMIT_ENDPOINTS.len())],
            },
            58..=60 => Action::Goaway {
                count: u32::try_from(rng.range(1, 2)).unwrap_or(1),
            },
            61..=62 => Action::Latency {
                ms: rng.range(50, 400),
                for_ms: rng.range(500, 3000),
            },
            63..=65 => Action::EvictSession {
                set: rng.index(sets),
            },
            66..=67 => Action::TokenExpiry,
            68 => Action::DeleteScaleSet {
                set: rng.index(sets),
            },
            69..=71 => Action::DisconnectRunner,
            72..=74 => Action::ProviderFails {
                for_ms: rng.range(500, 4000),
            },
            75..=76 => Action::ProviderSlow {
                ms: rng.range(500, 3000),
                for_ms: rng.range(1000, 5000),
            },
            77..=83 => Action::Kill {
                worker: rng.index(workers),
                down_ms: rng.range(0, 3000),
            },
            84..=87 => Action::Pause {
                worker: rng.index(workers),
                for_ms: rng.range(500, 6000),
            },
            88..=92 => Action::Restart {
                worker: rng.index(workers),
            },
            _ => match backend {
                Backend::Sqlite => Action::Wipe {
                    down_ms: rng.range(0, 2000),
                },
                Backend::Postgres => Action::CutDatabase,
            },
        };
        steps.push(Step { at, action });
        at += Duration::from_millis(rng.range(300, 2500));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_schedule_and_another_seed_another() {
        let a = plan(7, 120, 2, 3, Backend::Postgres, false);
        assert_eq!(a, plan(7, 120, 2, 3, Backend::Postgres, false));
        assert_ne!(a, plan(8, 120, 2, 3, Backend::Postgres, false));
        assert!(a.windows(2).all(|w| w[0].at < w[1].at), "in time order");
        assert!(a.iter().all(|s| s.at < Duration::from_secs(120)));
    }

    #[test]
    fn a_long_schedule_has_every_kind_for_its_backend_and_none_of_the_other() {
        let kinds = |backend| {
            plan(1, 3600, 2, 3, backend, false)
                .into_iter()
                .map(|s| s.action.kind())
                .collect::<std::collections::BTreeSet<_>>()
        };
        let sqlite = kinds(Backend::Sqlite);
        let postgres = kinds(Backend::Postgres);
        assert_eq!(sqlite.len(), 16, "{sqlite:?}");
        assert!(sqlite.contains("database wiped") && !sqlite.contains("database connections cut"));
        assert_eq!(postgres.len(), 16, "{postgres:?}");
        assert!(
            postgres.contains("database connections cut") && !postgres.contains("database wiped")
        );
    }

    #[test]
    fn a_partition_schedule_cuts_both_links_every_way_and_heals_each_cut() {
        let plain = plan(5, 600, 2, 3, Backend::Postgres, false);
        let cut = plan(5, 600, 2, 3, Backend::Postgres, true);
        let kinds: std::collections::BTreeSet<_> = cut
            .iter()
            .map(|s| s.action.kind())
            .filter(|k| k.starts_with("partition"))
            .collect();
        assert_eq!(kinds.len(), 10, "both links, five faults each: {kinds:?}");
        let partitions = cut
            .iter()
            .filter(|s| matches!(s.action, Action::Partition { .. }))
            .count();
        assert!(
            partitions * 5 > cut.len() && partitions * 2 < cut.len(),
            "{partitions} of {}",
            cut.len()
        );
        assert!(cut.iter().all(|s| match s.action {
            Action::Partition { for_ms, fault, .. } =>
                (1000..=12_000).contains(&for_ms) && fault != Fault::Pass,
            _ => true,
        }));
        assert!(
            !plain
                .iter()
                .any(|s| matches!(s.action, Action::Partition { .. }))
        );
        // SQLite has no database link to cut.
        assert!(
            plan(5, 600, 2, 1, Backend::Sqlite, true)
                .iter()
                .all(|s| !matches!(
                    s.action,
                    Action::Partition {
                        link: LinkTo::Database,
                        ..
                    }
                ))
        );
    }

    #[test]
    fn targets_stay_within_the_sets_and_workers_there_are() {
        for step in plan(3, 3600, 2, 1, Backend::Sqlite, true) {
            match step.action {
                Action::Jobs { set, .. }
                | Action::EvictSession { set }
                | Action::DeleteScaleSet { set } => assert!(set < 2),
                Action::Kill { worker, .. }
                | Action::Pause { worker, .. }
                | Action::Restart { worker }
                | Action::Partition { worker, .. } => assert_eq!(worker, 0),
                _ => {}
            }
        }
    }
}
