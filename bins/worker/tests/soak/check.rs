//! The invariants, checked over what the harness observed at quiescence. Pure: the run
//! gathers an [`Observed`] from the simulator, the provider's directory and the store, and
//! [`violations`] says what is wrong with it, so the checker itself is tested on worlds built
//! by hand (below), broken one invariant at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A scale set as GitHub (the simulator) has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitHubSet {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) labels: Vec<String>,
    /// `(session id, owner)`.
    pub(crate) session: Option<(String, String)>,
}

/// A job of one of our scale sets, as GitHub has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Job {
    pub(crate) id: i64,
    pub(crate) scale_set: String,
    pub(crate) state: String,
    pub(crate) reassignments: u32,
    pub(crate) runner: Option<String>,
}

/// A scale set as our store has it, with its event trail (oldest first: `(kind, reason)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredSet {
    pub(crate) name: String,
    pub(crate) state: String,
    pub(crate) github_id: Option<i64>,
    pub(crate) trail: Vec<(String, String)>,
}

/// What the recoveries the trail must explain were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Recoveries {
    /// Whether the database was wiped at least once.
    pub(crate) wiped: bool,
    /// Scale sets deleted on GitHub out of band after the last wipe (or ever, without one).
    pub(crate) deleted_since_wipe: BTreeSet<String>,
    /// Every out-of-band delete: the scale set's name and the GitHub id that went.
    pub(crate) deleted: Vec<(String, i64)>,
}

/// What a worker did on one of our scale sets, from the simulator's request log (each
/// worker reaches it from its own loopback address in a partition soak).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acted {
    /// It opened a message session (it serves the set from here on).
    SessionOpened,
    /// It created a runner (a JIT config).
    RunnerCreated,
    /// It acquired jobs.
    JobsAcquired,
}

/// One answered request of a worker on a scale set: `at_ms` is the simulator's real time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Act {
    pub(crate) at_ms: u64,
    pub(crate) worker: usize,
    pub(crate) scale_set: i64,
    pub(crate) what: Acted,
}

/// The fence, as GitHub saw it: once a worker opened its session on a scale set, no other
/// worker creates a runner or acquires a job there later than `ttl + bound` after (the other
/// lost its lease by then, so it must have fenced itself). Checked only in a partition soak.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Takeovers {
    pub(crate) acts: Vec<Act>,
    pub(crate) ttl: Duration,
    pub(crate) bound: Duration,
}

/// How long the fleet took to converge after one heal (`None`: it never did before the
/// checks ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Healed {
    /// What healed: a partition's link, or the quiescence (every fault off).
    pub(crate) what: String,
    /// When, from the start of the chaos.
    pub(crate) at: Duration,
    pub(crate) took: Option<Duration>,
}

/// How long the fleet took to converge after every heal, and the bound each must meet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Convergence {
    /// One per partition healed during the chaos, then the quiescence (the last heal).
    pub(crate) heals: Vec<Healed>,
    pub(crate) bound: Duration,
}

impl Convergence {
    /// How many heals converged, the median and the longest time they took.
    pub(crate) fn figures(&self) -> (usize, Duration, Duration) {
        let mut took: Vec<Duration> = self.heals.iter().filter_map(|h| h.took).collect();
        took.sort_unstable();
        let median = took.get(took.len() / 2).copied().unwrap_or_default();
        let longest = took.last().copied().unwrap_or_default();
        (took.len(), median, longest)
    }
}

/// Everything the invariants are checked over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Observed {
    /// The session owner name of our controller.
    pub(crate) owner: String,
    /// Our scale sets' names (the desired state).
    pub(crate) names: Vec<String>,
    /// Every scale set on GitHub, foreign ones included.
    pub(crate) github: Vec<GitHubSet>,
    /// GitHub ids our scale sets ever had (deleted ones too).
    pub(crate) our_ids: BTreeSet<i64>,
    /// The jobs of our scale sets as they are now.
    pub(crate) jobs: Vec<Job>,
    /// Jobs enqueued, and how many of them went with a scale set deleted out of band.
    pub(crate) enqueued: usize,
    pub(crate) lost_with_deleted_sets: usize,
    /// Runners the harness disconnected (each one needs a replacement machine).
    pub(crate) runners_killed: usize,
    /// Every instance of ours the provider ever created (its ledger), by name.
    pub(crate) created: Vec<String>,
    /// Instances of ours the provider still has.
    pub(crate) instances_left: Vec<String>,
    /// Runners (agents) still registered on scale sets of ours: `(scale-set id, name, status)`.
    pub(crate) runners_left: Vec<(i64, String, String)>,
    /// The foreign controller's scale set and its instance, as seeded and as found now.
    pub(crate) foreign_seeded: Option<GitHubSet>,
    pub(crate) foreign_instance_left: bool,
    /// Requests that wrote to the foreign scale set (anything but a GET on its path).
    pub(crate) foreign_writes: Vec<String>,
    /// Our store's scale sets.
    pub(crate) stored: Vec<StoredSet>,
    pub(crate) recoveries: Recoveries,
    /// Distinct GitHub ids of ours that any request named: every scale set of ours that ever
    /// existed (one per name, one more per out-of-band delete).
    pub(crate) scale_sets_created: usize,
    /// The fence as GitHub saw it (partition soaks; empty otherwise).
    pub(crate) takeovers: Takeovers,
    /// Convergence after every heal (partition soaks).
    pub(crate) convergence: Option<Convergence>,
}

/// What the fence's history shows, for the figures: sessions opened, takeovers (a session
/// opened by another worker than the set's last), and the latest a worker acted on a set
/// after another took it over.
pub(crate) fn takeover_figures(t: &Takeovers) -> (usize, usize, Duration) {
    let mut acts: Vec<&Act> = t.acts.iter().collect();
    acts.sort_by_key(|a| a.at_ms);
    let mut holder: BTreeMap<i64, (usize, u64)> = BTreeMap::new();
    let (mut sessions, mut takeovers, mut latest) = (0, 0, 0);
    for act in acts {
        match (act.what, holder.get(&act.scale_set).copied()) {
            (Acted::SessionOpened, last) => {
                sessions += 1;
                if last.is_some_and(|(w, _)| w != act.worker) {
                    takeovers += 1;
                }
                holder.insert(act.scale_set, (act.worker, act.at_ms));
            }
            (_, Some((w, since))) if w != act.worker => {
                latest = latest.max(act.at_ms.saturating_sub(since));
            }
            _ => {}
        }
    }
    (sessions, takeovers, Duration::from_millis(latest))
}

/// The workers that went on creating runners or acquiring jobs on a scale set after another
/// worker had taken it over (opened its session) for longer than the takeover allows.
fn late_acts(t: &Takeovers) -> Vec<String> {
    let mut out = Vec::new();
    let mut by_set: BTreeMap<i64, Vec<&Act>> = BTreeMap::new();
    for act in &t.acts {
        by_set.entry(act.scale_set).or_default().push(act);
    }
    let allowed = u64::try_from((t.ttl + t.bound).as_millis()).unwrap_or(u64::MAX);
    for (set, mut acts) in by_set {
        acts.sort_by_key(|a| a.at_ms);
        let mut holder: Option<(usize, u64)> = None;
        for act in acts {
            match (act.what, holder) {
                (Acted::SessionOpened, _) => holder = Some((act.worker, act.at_ms)),
                (_, Some((worker, since)))
                    if worker != act.worker && act.at_ms.saturating_sub(since) > allowed =>
                {
                    out.push(format!(
                        "worker {} acted ({:?}) on scale set {set} at {:.1} s, {:.1} s after worker {worker} opened its session there (at {:.1} s): beyond the lease TTL {:?} plus {:?}",
                        act.worker,
                        act.what,
                        act.at_ms as f64 / 1000.0,
                        (act.at_ms - since) as f64 / 1000.0,
                        since as f64 / 1000.0,
                        t.ttl,
                        t.bound,
                    ));
                }
                _ => {}
            }
        }
    }
    out
}

/// Every invariant the observation breaks, each in words that name the thing.
pub(crate) fn violations(o: &Observed) -> Vec<String> {
    let mut out = Vec::new();
    let ours = |s: &&GitHubSet| o.names.contains(&s.name);

    // No duplicate scale set on GitHub; each desired one exists once with our one session.
    for name in &o.names {
        let found: Vec<_> = o.github.iter().filter(|s| &s.name == name).collect();
        match found.as_slice() {
            [one] => match &one.session {
                Some((_, owner)) if *owner == o.owner => {}
                Some((id, owner)) => out.push(format!(
                    "scale set {name} (id {}) has session {id} of {owner}, not ours",
                    one.id
                )),
                None => out.push(format!("scale set {name} (id {}) has no session", one.id)),
            },
            [] => out.push(format!("scale set {name} is missing on GitHub")),
            many => out.push(format!(
                "duplicate scale set {name} on GitHub: ids {:?}",
                many.iter().map(|s| s.id).collect::<Vec<_>>()
            )),
        }
    }
    // No session of ours beyond the desired sets' one each.
    for set in o.github.iter().filter(|s| !ours(s)) {
        if let Some((id, owner)) = &set.session
            && *owner == o.owner
        {
            out.push(format!(
                "session {id} of ours left on scale set {} (id {}), which is not ours",
                set.name, set.id
            ));
        }
    }

    // Every job got exactly one runner that ran it.
    if o.jobs.len() + o.lost_with_deleted_sets != o.enqueued {
        out.push(format!(
            "{} jobs enqueued, {} went with deleted scale sets, but {} are on GitHub",
            o.enqueued,
            o.lost_with_deleted_sets,
            o.jobs.len()
        ));
    }
    let mut runs: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for job in &o.jobs {
        if job.state != "completed" {
            out.push(format!(
                "job {} of {} is {}, not completed",
                job.id, job.scale_set, job.state
            ));
        }
        if job.reassignments != 0 {
            out.push(format!(
                "job {} of {} was cancelled and requeued {} times (served more than once)",
                job.id, job.scale_set, job.reassignments
            ));
        }
        match &job.runner {
            Some(runner) => runs.entry(runner).or_default().push(job.id),
            None if job.state == "completed" => out.push(format!(
                "job {} of {} completed without a runner",
                job.id, job.scale_set
            )),
            None => {}
        }
    }
    for (runner, jobs) in runs.iter().filter(|(_, jobs)| jobs.len() > 1) {
        out.push(format!(
            "runner {runner} ran {} jobs {jobs:?} (ephemeral runners run one)",
            jobs.len()
        ));
    }
    // At most one instance per job ever created, counted from the provider's own ledger; a
    // runner the harness killed before it took a job needs one more.
    let allowed = o.enqueued + o.runners_killed;
    if o.created.len() > allowed {
        out.push(format!(
            "the provider created {} instances for {} jobs and {} killed runners",
            o.created.len(),
            o.enqueued,
            o.runners_killed
        ));
    }
    let unique: BTreeSet<_> = o.created.iter().collect();
    if unique.len() != o.created.len() {
        out.push("the provider's ledger names an instance twice".to_owned());
    }

    // Nothing of ours left over beyond what the desired state needs (no idle runner: min_idle 0).
    // Strict, wipes included: the orphan sweep (issue 36) deletes the instances of a scale set
    // GitHub deleted whose rows a wipe took before the superseded cleanup ran.
    if !o.instances_left.is_empty() {
        out.push(format!("instances left over: {:?}", o.instances_left));
    }
    if !o.runners_left.is_empty() {
        out.push(format!("runners left over: {:?}", o.runners_left));
    }

    // Nothing of the foreign controller touched.
    if let Some(seeded) = &o.foreign_seeded {
        // Its session may have gone by the simulator's expiry (no foreign listener polls it),
        // never by a request of ours: those are `foreign_writes`.
        let same = |now: &GitHubSet| {
            now.name == seeded.name
                && now.labels == seeded.labels
                && (now.session.is_none() || now.session == seeded.session)
        };
        match o.github.iter().find(|s| s.id == seeded.id) {
            Some(now) if same(now) => {}
            Some(now) => out.push(format!(
                "the foreign scale set changed: seeded {seeded:?}, now {now:?}"
            )),
            None => out.push(format!("the foreign scale set {seeded:?} is gone")),
        }
        if !o.foreign_writes.is_empty() {
            out.push(format!(
                "requests wrote to the foreign scale set: {:?}",
                o.foreign_writes
            ));
        }
        if !o.foreign_instance_left {
            out.push("the foreign controller's instance was deleted".to_owned());
        }
    }

    // No scale set created twice: one per name, one more per out-of-band delete.
    let allowed_sets = o.names.len() + o.recoveries.deleted.len();
    if o.scale_sets_created > allowed_sets {
        out.push(format!(
            "{} scale sets of ours existed on GitHub, at most {allowed_sets} allowed ({} names, {} deleted out of band): one was created twice",
            o.scale_sets_created,
            o.names.len(),
            o.recoveries.deleted.len()
        ));
    }
    // The fence, from GitHub's side; and convergence after every heal.
    out.extend(late_acts(&o.takeovers));
    if let Some(c) = &o.convergence {
        for heal in &c.heals {
            match heal.took {
                Some(took) if took <= c.bound => {}
                Some(took) => out.push(format!(
                    "the fleet converged {:.1} s after the heal of {} at {:.1} s, beyond the bound of {:?}",
                    took.as_secs_f64(),
                    heal.what,
                    heal.at.as_secs_f64(),
                    c.bound
                )),
                None => out.push(format!(
                    "the fleet did not converge after the heal of {} at {:.1} s (bound {:?})",
                    heal.what,
                    heal.at.as_secs_f64(),
                    c.bound
                )),
            }
        }
    }

    // Every scale set ready in our store, with GitHub's id, and its trail explains it.
    for name in &o.names {
        let Some(stored) = o.stored.iter().find(|s| &s.name == name) else {
            out.push(format!("scale set {name} is missing from the store"));
            continue;
        };
        if stored.state != "ready" {
            out.push(format!("scale set {name} is {}, not ready", stored.state));
        }
        let on_github = o.github.iter().find(|s| &s.name == name).map(|s| s.id);
        if stored.github_id != on_github {
            out.push(format!(
                "scale set {name} is stored with GitHub id {:?}, GitHub has {on_github:?}",
                stored.github_id
            ));
        }
        // The control crate records where a scale set came from as a `ready` event whose
        // reason says `created` or `adopted`, and a set GitHub deleted as `dormant` (found by
        // the listener) or as a `ready` whose reason says the stored one was deleted (found by
        // the ensure step first).
        let has = |kind: &str| stored.trail.iter().any(|(k, _)| k == kind);
        let ready_saying = |words: &str| {
            stored
                .trail
                .iter()
                .any(|(k, reason)| k == "ready" && reason.contains(words))
        };
        if !ready_saying(" created") && !ready_saying(" adopted") {
            out.push(format!(
                "the trail of {name} does not say where its scale set came from (no ready event saying created or adopted)"
            ));
        }
        // A deleted GitHub id the worker knew (its trail made it ready) must be seen as deleted;
        // one deleted before a worker on a wiped database had learned it was never ours to see.
        for (_, gone) in o.recoveries.deleted.iter().filter(|(n, _)| n == name) {
            if ready_saying(&format!("scale set {gone} "))
                && !has("dormant")
                && !ready_saying("GitHub had deleted the stored one")
            {
                out.push(format!(
                    "{name} (GitHub id {gone}) was deleted on GitHub but its trail has no dormant event and no ready event saying so"
                ));
            }
        }
        let deleted = o.recoveries.deleted_since_wipe.contains(name);
        if o.recoveries.wiped && !deleted && !ready_saying(" adopted") {
            out.push(format!(
                "the database was wiped but the trail of {name} has no ready event saying adopted"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: &str = "scaleset-ours";

    fn set(id: i64, name: &str, owner: &str) -> GitHubSet {
        GitHubSet {
            id,
            name: name.to_owned(),
            labels: vec![name.to_owned()],
            session: Some((format!("s{id}"), owner.to_owned())),
        }
    }

    fn job(id: i64, runner: &str) -> Job {
        Job {
            id,
            scale_set: "linux".to_owned(),
            state: "completed".to_owned(),
            reassignments: 0,
            runner: Some(runner.to_owned()),
        }
    }

    /// A world where every invariant holds: two jobs served by two runners, a wipe recovered by
    /// adoption, a foreign set untouched.
    fn healthy() -> Observed {
        let foreign = set(9, "theirs", "scaleset-other");
        Observed {
            owner: OWNER.to_owned(),
            names: vec!["linux".to_owned()],
            github: vec![set(1, "linux", OWNER), foreign.clone()],
            our_ids: BTreeSet::from([1]),
            jobs: vec![job(1, "linux-a"), job(2, "linux-b")],
            enqueued: 2,
            lost_with_deleted_sets: 0,
            runners_killed: 0,
            created: vec!["linux-a".to_owned(), "linux-b".to_owned()],
            instances_left: Vec::new(),
            runners_left: Vec::new(),
            foreign_seeded: Some(foreign),
            foreign_instance_left: true,
            foreign_writes: Vec::new(),
            stored: vec![StoredSet {
                name: "linux".to_owned(),
                state: "ready".to_owned(),
                github_id: Some(1),
                trail: vec![
                    ("declared".to_owned(), String::new()),
                    (
                        "ready".to_owned(),
                        "ready: scale set 1 adopted on evidence [OwnerLabel]".to_owned(),
                    ),
                ],
            }],
            recoveries: Recoveries {
                wiped: true,
                deleted_since_wipe: BTreeSet::new(),
                deleted: Vec::new(),
            },
            scale_sets_created: 1,
            takeovers: Takeovers {
                acts: vec![
                    act(1_000, 0, Acted::SessionOpened),
                    act(2_000, 0, Acted::RunnerCreated),
                    // Worker 1 takes over; worker 0's last create lands within the TTL + bound.
                    act(5_000, 1, Acted::SessionOpened),
                    act(12_000, 0, Acted::RunnerCreated),
                    act(13_000, 1, Acted::JobsAcquired),
                ],
                ttl: Duration::from_secs(3),
                bound: Duration::from_secs(5),
            },
            convergence: Some(Convergence {
                heals: vec![
                    healed("worker 1's Database link", 4, Some(6)),
                    healed("the quiescence", 60, Some(20)),
                ],
                bound: Duration::from_secs(90),
            }),
        }
    }

    fn healed(what: &str, at_secs: u64, took_secs: Option<u64>) -> Healed {
        Healed {
            what: what.to_owned(),
            at: Duration::from_secs(at_secs),
            took: took_secs.map(Duration::from_secs),
        }
    }

    fn act(at_ms: u64, worker: usize, what: Acted) -> Act {
        Act {
            at_ms,
            worker,
            scale_set: 1,
            what,
        }
    }

    #[test]
    fn the_figures_count_sessions_takeovers_and_the_latest_act_after_one() {
        assert_eq!(
            takeover_figures(&healthy().takeovers),
            (2, 1, Duration::from_secs(7))
        );
    }

    #[test]
    fn the_convergence_figures_count_converged_heals_with_their_median_and_longest() {
        let mut c = healthy().convergence.unwrap_or_default();
        c.heals.push(healed("worker 0's GitHub link", 30, Some(3)));
        c.heals.push(healed("worker 2's GitHub link", 40, None));
        assert_eq!(
            c.figures(),
            (3, Duration::from_secs(6), Duration::from_secs(20))
        );
    }

    #[test]
    fn a_healthy_world_has_no_violation() {
        assert_eq!(violations(&healthy()), Vec::<String>::new());
    }

    /// Each break of one invariant is reported, in words naming it.
    #[test]
    fn each_broken_invariant_is_reported() {
        type Break = (&'static str, fn(&mut Observed));
        let breaks: [Break; 23] = [
            ("one was created twice", |o| o.scale_sets_created = 2),
            ("worker 0 acted (RunnerCreated) on scale set 1", |o| {
                o.takeovers.acts.push(act(13_001, 0, Acted::RunnerCreated));
            }),
            (
                "converged 95.0 s after the heal of the quiescence at 60.0 s",
                |o| {
                    if let Some(c) = o.convergence.as_mut() {
                        c.heals[1].took = Some(Duration::from_secs(95));
                    }
                },
            ),
            ("did not converge after the heal of the quiescence", |o| {
                if let Some(c) = o.convergence.as_mut() {
                    c.heals[1].took = None;
                }
            }),
            // A heal in the middle of the chaos is held to the same bound as the last one.
            (
                "converged 91.0 s after the heal of worker 1's Database link at 4.0 s",
                |o| {
                    if let Some(c) = o.convergence.as_mut() {
                        c.heals[0].took = Some(Duration::from_secs(91));
                    }
                },
            ),
            (
                "did not converge after the heal of worker 1's Database link",
                |o| {
                    if let Some(c) = o.convergence.as_mut() {
                        c.heals[0].took = None;
                    }
                },
            ),
            ("duplicate scale set linux", |o| {
                o.github.push(set(2, "linux", "x"))
            }),
            ("missing on GitHub", |o| {
                o.github.retain(|s| s.name != "linux")
            }),
            ("has no session", |o| o.github[0].session = None),
            ("not ours", |o| {
                o.github[0].session = Some(("s".into(), "x".into()))
            }),
            ("of ours left on scale set theirs", |o| {
                o.github[1].session = Some(("s".into(), OWNER.into()));
                o.foreign_seeded = None;
            }),
            ("is running, not completed", |o| {
                o.jobs[0].state = "running".into()
            }),
            ("requeued 1 times", |o| o.jobs[0].reassignments = 1),
            ("ran 2 jobs", |o| o.jobs[1].runner = Some("linux-a".into())),
            ("but 1 are on GitHub", |o| {
                o.jobs.pop();
            }),
            ("created 3 instances for 2 jobs", |o| {
                o.created.push("linux-c".into())
            }),
            ("instances left over", |o| {
                o.instances_left.push("linux-c".into())
            }),
            ("runners left over", |o| {
                o.runners_left.push((1, "linux-c".into(), "idle".into()));
            }),
            ("foreign scale set changed", |o| o.github[1].labels.clear()),
            ("wrote to the foreign scale set", |o| {
                o.foreign_writes.push("DELETE /sessions/s9".into());
            }),
            ("not ready", |o| o.stored[0].state = "error".into()),
            ("where its scale set came from", |o| {
                o.stored[0].trail.truncate(1)
            }),
            ("no ready event saying adopted", |o| {
                o.stored[0].trail[1].1 = "ready: scale set 1 created on evidence []".into();
            }),
        ];
        for (words, break_it) in breaks {
            let mut world = healthy();
            break_it(&mut world);
            let found = violations(&world);
            assert!(
                found.iter().any(|v| v.contains(words)),
                "breaking {words:?} was not reported: {found:?}"
            );
        }
        let mut world = healthy();
        world.recoveries.deleted_since_wipe.insert("linux".into());
        world.recoveries.deleted.push(("linux".into(), 1));
        assert!(
            violations(&world)
                .iter()
                .any(|v| v.contains("no dormant event"))
        );
        world.stored[0]
            .trail
            .push(("dormant".into(), "GitHub deleted it".into()));
        assert!(
            !violations(&world)
                .iter()
                .any(|v| v.contains("no dormant event"))
        );
        // No leak is tolerated any more (issue 36): a leftover of a scale set GitHub deleted,
        // in a run with a wipe, fails like any other.
        let mut world = healthy();
        world.recoveries.deleted.push(("arm".into(), 2));
        world.instances_left.push("c_2/arm-a.json".into());
        assert_eq!(
            violations(&world),
            vec![r#"instances left over: ["c_2/arm-a.json"]"#.to_owned()]
        );
        // A deleted id the worker never learned (not in the trail) needs no dormant event.
        let mut world = healthy();
        world.recoveries.deleted.push(("linux".into(), 7));
        assert_eq!(violations(&world), Vec::<String>::new());
        let mut world = healthy();
        world.foreign_instance_left = false;
        assert!(
            violations(&world)
                .iter()
                .any(|v| v.contains("foreign controller's instance"))
        );
    }
}
