//! The teardown core against a model of GitHub, the cloud and the store, with a hostile
//! GitHub look-up (answers naming other runners), a hostile provider (failures, ids claimed by
//! other rows, instances of other controllers beside ours), jobs starting mid-teardown,
//! re-delivered answers, a fake clock, a step bound and a crash between any two commands
//! (the teardown started again from the persisted row).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use scaleset_github::{GithubScaleSetId, Removal, RunnerId};
use scaleset_provider::PoolKey;
use scaleset_store::InstanceStatus;

use super::*;
use crate::provider_backoff::ProviderHealth;

const OURS: GithubScaleSetId = GithubScaleSetId(5);
const OTHER_SET: GithubScaleSetId = GithubScaleSetId(6);
const POOL: &str = "ctl_5";
const GARM_POOL: &str = "garm_5";
const FOREIGN_POOL: &str = "other-controller_5";
const NAME: &str = "ci-a";

fn ours() -> Ours {
    Ours {
        scale_set: OURS,
        pool_key: POOL.to_owned(),
        inherited_pool_key: Some(GARM_POOL.to_owned()),
    }
}

/// A runner registered at GitHub.
#[derive(Debug, Clone)]
struct GhRunner {
    name: String,
    scale_set: GithubScaleSetId,
    busy: bool,
}

/// A machine at the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Machine {
    provider_id: String,
    name: String,
    pool_key: String,
}

/// How GitHub answers a look-up by name.
#[derive(Debug, Clone, Copy)]
enum LookUp {
    /// The runner of that name, if any.
    Truthful,
    /// Another runner registered (a different name).
    OtherName,
}

/// One generated world and its hostility.
#[derive(Debug, Clone)]
struct Scenario {
    status: InstanceStatus,
    /// Whether the row records its runner id.
    records_runner_id: bool,
    /// Whether our runner is registered, and busy.
    registered: Option<bool>,
    /// A runner of our name in another scale set instead of ours (names are unique).
    same_name_elsewhere: bool,
    /// The row's recorded provider id: none, the machine's, or its name.
    provider_id: Option<bool>,
    /// The row's pool: 0 served, 1 GARM's, 2 another controller's.
    pool: u8,
    /// Another row claims the row's provider id.
    claimed_by_other: bool,
    /// A create answer with the row's provider id was refused.
    refused: bool,
    /// The provider backs off until this many ms after the start (0: no back-off).
    backoff_ms: u64,
    /// The provider fails the first this many deletes.
    delete_failures: u8,
    look_up: LookUp,
    /// A job starts on our runner before this command (if it is still registered).
    job_starts_at: Option<usize>,
    /// Crash (drop the core, start again from the row) before these commands.
    crashes: Vec<usize>,
    /// Answers delivered twice.
    redeliver: Vec<usize>,
    /// Ms the clock moves per command.
    tick_ms: u64,
}

fn status() -> impl Strategy<Value = InstanceStatus> {
    prop_oneof![
        Just(InstanceStatus::Pending),
        Just(InstanceStatus::Creating),
        Just(InstanceStatus::Running),
        Just(InstanceStatus::Busy),
        Just(InstanceStatus::Failed),
        Just(InstanceStatus::Deleting),
        Just(InstanceStatus::Deleted),
    ]
}

prop_compose! {
    fn scenario()(
        status in status(),
        records_runner_id in any::<bool>(),
        registered in proptest::option::of(any::<bool>()),
        same_name_elsewhere in any::<bool>(),
        provider_id in proptest::option::of(any::<bool>()),
        pool in 0u8..3,
        claimed_by_other in any::<bool>(),
        refused in any::<bool>(),
        backoff_ms in prop_oneof![Just(0u64), 1u64..200],
        delete_failures in 0u8..3,
        look_up in prop_oneof![Just(LookUp::Truthful), Just(LookUp::OtherName)],
        job_starts_at in proptest::option::of(0usize..12),
        crashes in proptest::collection::vec(0usize..30, 0..4),
        redeliver in proptest::collection::vec(0usize..30, 0..4),
        tick_ms in 0u64..60,
    ) -> Scenario {
        Scenario {
            status, records_runner_id, registered, same_name_elsewhere, provider_id, pool,
            claimed_by_other, refused, backoff_ms, delete_failures, look_up, job_starts_at,
            crashes, redeliver, tick_ms,
        }
    }
}

/// The world: GitHub's runners, the provider's machines, the store's rows, and what the
/// core was told.
struct World {
    runners: BTreeMap<i64, GhRunner>,
    machines: Vec<Machine>,
    /// Our row (`None` once forgotten).
    row: Option<Row>,
    /// Other rows of the store: (name, provider id).
    others: Vec<Claim>,
    refused: HashSet<String>,
    health: ProviderHealth,
    delete_failures: u8,
    look_up: LookUp,
    /// Runner ids the core was told are busy, or were answered for another name.
    never_remove: HashSet<i64>,
    /// Runners removed while busy, and machines deleted that were not ours to delete.
    violations: Vec<String>,
    commands: usize,
    /// The pool key the row was recorded with: the only one its machine may be deleted in.
    recorded_key: String,
    /// The events the core appended.
    notes: Vec<Note>,
}

/// The GitHub scale set a superseded row was made for.
const OLD_SET: GithubScaleSetId = GithubScaleSetId(4);
/// Its pool key (ours), and an old GARM pool key a row of a former takeover carries.
const OLD_POOL: &str = "ctl_4";
const OLD_GARM_POOL: &str = "garm_4";
const OUR_ID: i64 = 7;
const ELSEWHERE_ID: i64 = 8;
const STRANGER_ID: i64 = 9;
const MACHINE_ID: &str = "i-ours";
const OTHER_MACHINE_NAME: &str = "ci-b";

impl World {
    fn new(s: &Scenario, start: Instant) -> Self {
        let mut runners = BTreeMap::new();
        if let Some(busy) = s.registered {
            runners.insert(
                OUR_ID,
                GhRunner {
                    name: NAME.to_owned(),
                    scale_set: OURS,
                    busy,
                },
            );
        } else if s.same_name_elsewhere {
            runners.insert(
                ELSEWHERE_ID,
                GhRunner {
                    name: NAME.to_owned(),
                    scale_set: OTHER_SET,
                    busy: false,
                },
            );
        }
        runners.insert(
            STRANGER_ID,
            GhRunner {
                name: "ci-stranger".to_owned(),
                scale_set: OURS,
                busy: false,
            },
        );
        let pool_key = [POOL, GARM_POOL, FOREIGN_POOL][usize::from(s.pool)].to_owned();
        // The row records `MACHINE_ID`. Disputed (another row claims it, or a create answer
        // with it was refused), that id names another machine under our pool key, and ours
        // has an id we never learnt. Beside them: another row's machine under our pool key,
        // and another controller's machine with the same id under its own pool key.
        let disputed = s.provider_id == Some(true) && (s.claimed_by_other || s.refused);
        let mut machines = vec![
            Machine {
                provider_id: "i-b".to_owned(),
                name: OTHER_MACHINE_NAME.to_owned(),
                pool_key: POOL.to_owned(),
            },
            Machine {
                provider_id: MACHINE_ID.to_owned(),
                name: "theirs".to_owned(),
                pool_key: FOREIGN_POOL.to_owned(),
            },
        ];
        // A row `deleted` says its machine is gone already.
        if s.status != InstanceStatus::Deleted {
            machines.push(Machine {
                provider_id: if disputed { "i-unknown" } else { MACHINE_ID }.to_owned(),
                name: NAME.to_owned(),
                pool_key: pool_key.clone(),
            });
        }
        if disputed {
            machines.push(Machine {
                provider_id: MACHINE_ID.to_owned(),
                name: "ci-c".to_owned(),
                pool_key: pool_key.clone(),
            });
        }
        let provider_id = s.provider_id.map(|machine| {
            if machine {
                MACHINE_ID.to_owned()
            } else {
                NAME.to_owned()
            }
        });
        let mut others = vec![Claim {
            name: OTHER_MACHINE_NAME.to_owned(),
            provider_id: Some("i-b".to_owned()),
        }];
        if s.claimed_by_other {
            // A row recorded with the same id before the claim rules (its machine is the
            // one this id names, as far as anyone can tell).
            others.push(Claim {
                name: "ci-c".to_owned(),
                provider_id: Some(MACHINE_ID.to_owned()),
            });
        }
        let mut refused = HashSet::new();
        if s.refused {
            refused.insert(MACHINE_ID.to_owned());
        }
        let health = if s.backoff_ms == 0 {
            ProviderHealth::default()
        } else {
            ProviderHealth {
                failures: 1,
                retry_at: Some(start + Duration::from_millis(s.backoff_ms)),
            }
        };
        let runner_id = (s.records_runner_id && s.registered.is_some()).then_some(RunnerId(OUR_ID));
        Self {
            runners,
            machines,
            row: Some(Row {
                name: NAME.to_owned(),
                status: s.status,
                runner_id,
                provider_id,
                pool_key,
            }),
            others,
            refused,
            health,
            delete_failures: s.delete_failures,
            look_up: s.look_up,
            never_remove: HashSet::new(),
            violations: Vec::new(),
            commands: 0,
            recorded_key: [POOL, GARM_POOL, FOREIGN_POOL][usize::from(s.pool)].to_owned(),
            notes: Vec::new(),
        }
    }

    /// The world of a row recorded under `key` for the GitHub scale set `OLD_SET`, deleted
    /// and replaced by the served one: its runner (if any) registered with the old set, its
    /// machine (and a disputed one) under `key`.
    fn superseded(s: &Scenario, key: &str, start: Instant) -> Self {
        let mut world = Self::new(s, start);
        for m in &mut world.machines {
            if m.name == NAME || m.name == "ci-c" {
                m.pool_key = key.to_owned();
            }
        }
        for r in world.runners.values_mut() {
            if r.name == NAME {
                r.scale_set = OLD_SET;
            }
        }
        if let Some(row) = &mut world.row {
            row.pool_key = key.to_owned();
        }
        world.recorded_key = key.to_owned();
        world
    }

    /// Answers a look-up with `found`, remembering what the core was told not to remove.
    fn found(&mut self, found: Option<FoundRunner>, name: &str) -> Option<Fact> {
        if let Some(found) = &found
            && (found.busy || found.name != name || found.scale_set == OTHER_SET)
        {
            self.never_remove.insert(found.id.0);
        }
        Some(Fact::RunnerFound(found))
    }

    /// Carries `command` out at `now`, as the executor would against this world.
    fn execute(&mut self, command: Command, now: Instant) -> Option<Fact> {
        self.commands += 1;
        match command {
            Command::FindRunner { name } => {
                let truth = self.runners.iter().find(|(_, r)| r.name == name);
                let answer = match self.look_up {
                    LookUp::Truthful => truth,
                    LookUp::OtherName => self.runners.iter().find(|(_, r)| r.name != name),
                };
                let found = answer.map(|(id, r)| FoundRunner {
                    id: RunnerId(*id),
                    name: r.name.clone(),
                    scale_set: r.scale_set,
                    busy: r.busy,
                });
                self.found(found, &name)
            }
            Command::GetRunner { id } => {
                let answer = match self.look_up {
                    LookUp::Truthful => self.runners.get_key_value(&id.0),
                    LookUp::OtherName => self.runners.iter().find(|(_, r)| r.name != NAME),
                };
                let found = answer.map(|(id, r)| FoundRunner {
                    id: RunnerId(*id),
                    name: r.name.clone(),
                    scale_set: r.scale_set,
                    busy: r.busy,
                });
                self.found(found, NAME)
            }
            Command::RemoveRegistered { entity, id, .. } => {
                self.violations
                    .push("removed a runner of another entity for a row".to_owned());
                Some(Fact::RegistrationRemoved {
                    entity,
                    id,
                    removal: Removal::Gone,
                })
            }
            Command::Note {
                note,
                name,
                pool_key,
            } => {
                if name != NAME || pool_key != self.recorded_key {
                    self.violations.push(format!("noted {name} of {pool_key}"));
                }
                self.notes.push(note);
                None
            }
            Command::RemoveRunner { id, name } => {
                if self.never_remove.contains(&id.0) {
                    self.violations
                        .push(format!("removed runner {} it was told not to", id.0));
                }
                match self.runners.get(&id.0) {
                    Some(r) if r.name != name => {
                        self.violations
                            .push(format!("removed runner {} named {}", id.0, r.name));
                        Some(Fact::RunnerRemoved(Removal::Removed))
                    }
                    // GitHub refuses to remove a runner running a job.
                    Some(r) if r.busy => Some(Fact::RunnerRemoved(Removal::StillRunning)),
                    Some(_) => {
                        self.runners.remove(&id.0);
                        Some(Fact::RunnerRemoved(Removal::Removed))
                    }
                    None => Some(Fact::RunnerRemoved(Removal::Gone)),
                }
            }
            Command::Transition { name, to } => {
                let row = self.row.as_mut().filter(|r| r.name == name)?;
                if !row.status.can_move_to(to) {
                    // The store refuses: an error ends the executor (as a crash would).
                    return None;
                }
                row.status = to;
                Some(Fact::Moved)
            }
            Command::LookUpClaims { provider_id } => Some(Fact::Claims {
                claimed: self
                    .others
                    .iter()
                    .chain(
                        self.row
                            .iter()
                            .map(|r| Claim {
                                name: r.name.clone(),
                                provider_id: r.provider_id.clone(),
                            })
                            .collect::<Vec<_>>()
                            .iter(),
                    )
                    .filter(|c| {
                        c.provider_id.as_deref() == Some(provider_id.as_str())
                            || c.name == provider_id
                    })
                    .cloned()
                    .collect(),
                refused: self.refused.contains(&provider_id),
            }),
            Command::DeleteInstance { name, pool, id } => {
                if !self.health.may_call(now) {
                    self.violations.push("deleted while backing off".to_owned());
                }
                if self.runners.values().any(|r| r.name == name && r.busy) {
                    self.violations
                        .push("deleted the machine of a busy runner".to_owned());
                }
                if self.delete_failures > 0 {
                    self.delete_failures -= 1;
                    return Some(Fact::InstanceDeleteFailed);
                }
                let key = match &pool {
                    PoolOf::Served => POOL,
                    PoolOf::Inherited => GARM_POOL,
                    PoolOf::Recorded(key) => key.as_str(),
                    PoolOf::Orphaned { key, .. } => key.as_str(),
                }
                .to_owned();
                if key != self.recorded_key {
                    self.violations.push(format!(
                        "deleted in pool {key}, recorded in {}",
                        self.recorded_key
                    ));
                }
                for m in self
                    .machines
                    .iter()
                    .filter(|m| m.pool_key == key && (m.provider_id == id || m.name == id))
                {
                    if m.name != name {
                        self.violations
                            .push(format!("deleted machine {} for row {name}", m.name));
                    }
                }
                self.machines
                    .retain(|m| !(m.pool_key == key && (m.provider_id == id || m.name == id)));
                Some(Fact::InstanceDeleted)
            }
            Command::ProviderWorked => {
                self.health = ProviderHealth::default();
                None
            }
            Command::ProviderFailed => {
                self.health = ProviderHealth {
                    failures: self.health.failures + 1,
                    retry_at: Some(now + Duration::from_millis(50)),
                };
                None
            }
            Command::DeleteRow { name } => {
                if self.row.as_ref().is_some_and(|r| r.name == name) {
                    self.row = None;
                }
                Some(Fact::RowDeleted)
            }
        }
    }

    fn start_job(&mut self) {
        for runner in self.runners.values_mut() {
            if runner.name == NAME && runner.scale_set == OURS {
                runner.busy = true;
            }
        }
    }
}

/// What one run of the scenario left.
struct Ran {
    world: World,
    outcome: Option<Outcome>,
    restarts: usize,
}

/// Bound on commands across all restarts: a teardown is at most 8 commands.
const STEP_BOUND: usize = 60;

/// Which teardown a run starts (again, after a crash) from the row.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Row,
    Superseded,
}

fn run(s: &Scenario) -> Ran {
    let start = Instant::now();
    run_in(s, World::new(s, start), start, Kind::Row)
}

fn run_in(s: &Scenario, mut world: World, start: Instant, kind: Kind) -> Ran {
    let mut now = start;
    let mut step = 0usize;
    let mut restarts = 0usize;
    let mut outcome = None;
    // Started again from the row after a crash; also after a deferral once the clock passed
    // the back-off (as `retry_deletions` does), up to the bound.
    'restart: while let Some(row) = world.row.clone() {
        let mut core = match kind {
            Kind::Row => Teardown::new(row, ours(), world.health, now),
            Kind::Superseded => {
                let key = PoolKey::parse(&row.pool_key).expect("a valid pool key");
                Teardown::superseded(row, key, ours(), now)
            }
        };
        loop {
            let Some(command) = core.poll_command() else {
                outcome = core.outcome();
                match (outcome, core.poll_timeout()) {
                    (Some(Outcome::Deferred), Some(wake)) if step < STEP_BOUND => {
                        now = now.max(wake);
                        restarts += 1;
                        continue 'restart;
                    }
                    (Some(Outcome::Deferred), None) if step < STEP_BOUND => {
                        restarts += 1;
                        continue 'restart;
                    }
                    _ => break 'restart,
                }
            };
            step += 1;
            assert!(step <= STEP_BOUND, "no end within {STEP_BOUND} commands");
            if s.job_starts_at == Some(step) {
                world.start_job();
            }
            if s.crashes.contains(&step) {
                restarts += 1;
                continue 'restart;
            }
            now += Duration::from_millis(s.tick_ms);
            let Some(fact) = world.execute(command, now) else {
                continue;
            };
            core.handle(fact.clone(), now);
            if s.redeliver.contains(&step) {
                core.handle(fact, now);
            }
            if world.row.is_none() {
                // Nothing is left to restart from: the core must have ended, with at most an
                // event left to append.
                while let Some(command) = core.poll_command() {
                    assert!(matches!(command, Command::Note { .. }), "{command:?}");
                    world.execute(command, now);
                }
                outcome = core.outcome();
                break 'restart;
            }
        }
    }
    Ran {
        world,
        outcome,
        restarts,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_teardown_never_deletes_what_is_not_ours_nor_removes_a_busy_runner(s in scenario()) {
        let ran = run(&s);
        prop_assert!(ran.world.violations.is_empty(), "{:?}", ran.world.violations);
        // Another controller's machine and another row's machine are never touched.
        prop_assert!(ran.world.machines.iter().any(|m| m.name == "theirs"));
        prop_assert!(ran.world.machines.iter().any(|m| m.name == OTHER_MACHINE_NAME));
        prop_assert!(
            !(s.provider_id == Some(true) && (s.claimed_by_other || s.refused))
                || ran.world.machines.iter().any(|m| m.name == "ci-c")
        );
    }

    #[test]
    fn a_row_of_a_pool_not_ours_is_left_alone(
        s in scenario().prop_map(|s| Scenario { pool: 2, ..s }),
    ) {
        let ran = run(&s);
        prop_assert_eq!(ran.outcome, Some(Outcome::NotOurs));
        prop_assert_eq!(ran.world.commands, 0);
        prop_assert!(ran.world.row.is_some());
    }

    #[test]
    fn a_busy_runner_keeps_its_machine_and_its_row(
        s in scenario().prop_map(|s| Scenario {
            pool: s.pool % 2,
            registered: Some(true),
            look_up: if s.records_runner_id { s.look_up } else { LookUp::Truthful },
            ..s
        }),
    ) {
        let ran = run(&s);
        prop_assert!(ran.world.row.is_some());
        prop_assert!(
            s.status == InstanceStatus::Deleted
                || ran.world.machines.iter().any(|m| m.name == NAME)
        );
        prop_assert!(ran.world.runners.contains_key(&OUR_ID));
        prop_assert_eq!(ran.outcome, Some(Outcome::Kept));
    }

    #[test]
    fn an_idle_runner_is_taken_down_everywhere_whatever_crashes_and_redeliveries(
        s in scenario().prop_map(|s| Scenario {
            pool: s.pool % 2,
            registered: s.registered.map(|_| false),
            job_starts_at: None,
            look_up: if s.records_runner_id && s.registered.is_some() {
                s.look_up
            } else {
                LookUp::Truthful
            },
            ..s
        }),
    ) {
        let ran = run(&s);
        prop_assert_eq!(ran.outcome, Some(Outcome::Removed), "restarts {}", ran.restarts);
        prop_assert!(ran.world.row.is_none());
        prop_assert!(!ran.world.runners.contains_key(&OUR_ID));
        // Our machine is gone, deleted by its id or its name, unless it was recorded by a
        // disputed id: then by its name, which also finds it.
        prop_assert!(!ran.world.machines.iter().any(|m| m.name == NAME));
    }

    #[test]
    fn an_answer_naming_another_runner_is_no_evidence_of_absence(
        s in scenario().prop_map(|s| Scenario {
            pool: s.pool % 2,
            look_up: LookUp::OtherName,
            records_runner_id: false,
            ..s
        }),
    ) {
        let ran = run(&s);
        prop_assert_eq!(ran.outcome, Some(Outcome::Unconfirmed));
        prop_assert!(ran.world.row.is_some());
        prop_assert!(
            s.status == InstanceStatus::Deleted
                || ran.world.machines.iter().any(|m| m.name == NAME)
        );
    }
}

#[test]
fn an_instance_recorded_by_a_disputed_id_is_deleted_by_its_name() {
    let now = Instant::now();
    let row = Row {
        name: NAME.to_owned(),
        status: InstanceStatus::Deleting,
        runner_id: None,
        provider_id: Some(MACHINE_ID.to_owned()),
        pool_key: POOL.to_owned(),
    };
    let mut core = Teardown::new(row.clone(), ours(), ProviderHealth::default(), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::FindRunner {
            name: NAME.to_owned()
        })
    );
    core.handle(Fact::RunnerFound(None), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::LookUpClaims {
            provider_id: MACHINE_ID.to_owned()
        })
    );
    core.handle(
        Fact::Claims {
            claimed: vec![Claim {
                name: "ci-c".to_owned(),
                provider_id: Some(MACHINE_ID.to_owned()),
            }],
            refused: false,
        },
        now,
    );
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteInstance {
            name: NAME.to_owned(),
            pool: PoolOf::Served,
            id: NAME.to_owned(),
        })
    );
    // Undisputed, and in GARM's pool: by the id, in GARM's pool.
    let garm = Row {
        pool_key: GARM_POOL.to_owned(),
        ..row
    };
    let mut core = Teardown::new(garm, ours(), ProviderHealth::default(), now);
    core.poll_command();
    core.handle(Fact::RunnerFound(None), now);
    core.poll_command();
    core.handle(
        Fact::Claims {
            claimed: Vec::new(),
            refused: false,
        },
        now,
    );
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteInstance {
            name: NAME.to_owned(),
            pool: PoolOf::Inherited,
            id: MACHINE_ID.to_owned(),
        })
    );
}

#[test]
fn an_instance_recorded_by_its_own_name_is_deleted_by_it_without_asking_the_claims() {
    // No other row can claim an id that is this row's name: no lookup, the delete at once.
    let now = Instant::now();
    for provider_id in [None, Some(NAME.to_owned())] {
        let row = Row {
            name: NAME.to_owned(),
            status: InstanceStatus::Deleting,
            runner_id: None,
            provider_id,
            pool_key: POOL.to_owned(),
        };
        let mut core = Teardown::new(row, ours(), ProviderHealth::default(), now);
        core.poll_command();
        core.handle(Fact::RunnerFound(None), now);
        assert_eq!(
            core.poll_command(),
            Some(Command::DeleteInstance {
                name: NAME.to_owned(),
                pool: PoolOf::Served,
                id: NAME.to_owned(),
            })
        );
    }
}

#[test]
fn a_teardown_in_back_off_keeps_the_row_deleting_and_wakes_when_it_ends() {
    let now = Instant::now();
    let retry_at = now + Duration::from_secs(30);
    let health = ProviderHealth {
        failures: 2,
        retry_at: Some(retry_at),
    };
    let row = Row {
        name: NAME.to_owned(),
        status: InstanceStatus::Running,
        runner_id: Some(RunnerId(OUR_ID)),
        provider_id: None,
        pool_key: POOL.to_owned(),
    };
    let mut core = Teardown::new(row, ours(), health, now);
    assert_eq!(core.poll_timeout(), None);
    core.poll_command();
    core.handle(Fact::RunnerRemoved(Removal::Removed), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::Transition {
            name: NAME.to_owned(),
            to: InstanceStatus::Deleting
        })
    );
    // The back-off ends one second before the answer: the delete goes out.
    let mut late = Teardown::new(
        Row {
            name: NAME.to_owned(),
            status: InstanceStatus::Deleting,
            runner_id: None,
            provider_id: None,
            pool_key: POOL.to_owned(),
        },
        ours(),
        health,
        now,
    );
    late.poll_command();
    late.handle(Fact::RunnerFound(None), retry_at);
    assert!(matches!(
        late.poll_command(),
        Some(Command::DeleteInstance { .. })
    ));
    core.handle(Fact::Moved, now + Duration::from_secs(1));
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Deferred));
    assert_eq!(core.poll_timeout(), Some(retry_at));
}

#[test]
fn a_failed_delete_is_fed_to_the_back_off_and_a_worked_one_too() {
    let now = Instant::now();
    let row = Row {
        name: NAME.to_owned(),
        status: InstanceStatus::Deleting,
        runner_id: Some(RunnerId(OUR_ID)),
        provider_id: None,
        pool_key: POOL.to_owned(),
    };
    let mut core = Teardown::new(row.clone(), ours(), ProviderHealth::default(), now);
    core.poll_command();
    core.handle(Fact::RunnerRemoved(Removal::Gone), now);
    core.poll_command();
    core.handle(Fact::InstanceDeleteFailed, now);
    assert_eq!(core.poll_command(), Some(Command::ProviderFailed));
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Deferred));

    let mut core = Teardown::new(row, ours(), ProviderHealth::default(), now);
    core.poll_command();
    core.handle(Fact::RunnerRemoved(Removal::Gone), now);
    core.poll_command();
    core.handle(Fact::InstanceDeleted, now);
    assert_eq!(core.poll_command(), Some(Command::ProviderWorked));
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteRow {
            name: NAME.to_owned()
        })
    );
    assert_eq!(core.outcome(), None);
    core.handle(Fact::RowDeleted, now);
    assert_eq!(core.outcome(), Some(Outcome::Removed));
}

#[test]
fn a_deleted_row_is_only_forgotten() {
    let now = Instant::now();
    let row = Row {
        name: NAME.to_owned(),
        status: InstanceStatus::Deleted,
        runner_id: None,
        provider_id: Some(MACHINE_ID.to_owned()),
        pool_key: POOL.to_owned(),
    };
    let mut core = Teardown::new(row, ours(), ProviderHealth::default(), now);
    core.poll_command();
    core.handle(Fact::RunnerFound(None), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteRow {
            name: NAME.to_owned()
        })
    );
}

#[test]
fn a_running_row_whose_runner_took_a_job_is_marked_busy_and_kept() {
    let now = Instant::now();
    let row = Row {
        name: NAME.to_owned(),
        status: InstanceStatus::Running,
        runner_id: None,
        provider_id: None,
        pool_key: POOL.to_owned(),
    };
    let mut core = Teardown::new(row, ours(), ProviderHealth::default(), now);
    core.poll_command();
    core.handle(
        Fact::RunnerFound(Some(FoundRunner {
            id: RunnerId(OUR_ID),
            name: NAME.to_owned(),
            scale_set: OURS,
            busy: true,
        })),
        now,
    );
    assert_eq!(
        core.poll_command(),
        Some(Command::Transition {
            name: NAME.to_owned(),
            to: InstanceStatus::Busy
        })
    );
    // A re-delivered look-up answer is ignored.
    core.handle(Fact::RunnerFound(None), now);
    assert_eq!(core.poll_command(), None);
    core.handle(Fact::Moved, now);
    assert_eq!(core.outcome(), Some(Outcome::Kept));
    assert_eq!(core.poll_command(), None);
}

#[test]
fn an_unrecorded_instance_is_deleted_by_the_answered_id_in_the_served_pool() {
    let now = Instant::now();
    let mut core = Teardown::unrecorded(NAME.to_owned(), MACHINE_ID.to_owned(), POOL, ours(), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteInstance {
            name: NAME.to_owned(),
            pool: PoolOf::Served,
            id: MACHINE_ID.to_owned(),
        })
    );
    core.handle(Fact::InstanceDeleteFailed, now);
    // Left to the reconciliation: no back-off fed, nothing else.
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Deferred));
    let mut core = Teardown::unrecorded(NAME.to_owned(), MACHINE_ID.to_owned(), POOL, ours(), now);
    core.poll_command();
    core.handle(Fact::InstanceDeleted, now);
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Removed));
}

fn fact() -> impl Strategy<Value = Fact> {
    let found = (
        0i64..4,
        prop_oneof![Just(NAME), Just("ci-b")],
        prop_oneof![Just(OURS), Just(OTHER_SET), Just(GithubScaleSetId(0))],
        any::<bool>(),
    )
        .prop_map(|(id, name, scale_set, busy)| FoundRunner {
            id: RunnerId(id),
            name: name.to_owned(),
            scale_set,
            busy,
        });
    let claim =
        (prop_oneof![Just(NAME), Just("ci-c")], any::<bool>()).prop_map(|(name, has)| Claim {
            name: name.to_owned(),
            provider_id: has.then(|| MACHINE_ID.to_owned()),
        });
    prop_oneof![
        proptest::option::of(found).prop_map(Fact::RunnerFound),
        prop_oneof![
            Just(Removal::Removed),
            Just(Removal::Gone),
            Just(Removal::StillRunning)
        ]
        .prop_map(Fact::RunnerRemoved),
        Just(Fact::Moved),
        (proptest::collection::vec(claim, 0..3), any::<bool>())
            .prop_map(|(claimed, refused)| Fact::Claims { claimed, refused }),
        Just(Fact::InstanceDeleted),
        Just(Fact::InstanceDeleteFailed),
        Just(Fact::RowDeleted),
        (
            0usize..2,
            0i64..4,
            prop_oneof![
                Just(Removal::Removed),
                Just(Removal::Gone),
                Just(Removal::StillRunning)
            ]
        )
            .prop_map(|(entity, id, removal)| Fact::RegistrationRemoved {
                entity,
                id: RunnerId(id),
                removal
            }),
    ]
}

/// Which constructor a fuzzed core starts from.
#[derive(Debug, Clone, Copy)]
enum Start {
    Row,
    Unrecorded,
    StrayRunner,
    Superseded,
    Orphan,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Whatever answers arrive, in whatever order and however often: a delete goes only to
    /// the row's own pool when it is ours and names the row or its recorded id, a runner is
    /// removed only by the recorded id or an id GitHub answered for the row's name, idle, in
    /// our scale set (or none), and nothing is asked once the teardown ended.
    #[test]
    fn whatever_the_answers_a_teardown_acts_only_on_what_it_verified(
        start in prop_oneof![
            Just(Start::Row),
            Just(Start::Unrecorded),
            Just(Start::StrayRunner),
            Just(Start::Superseded),
            Just(Start::Orphan),
        ],
        status in status(),
        runner_id in proptest::option::of(0i64..4),
        provider_id in proptest::option::of(prop_oneof![Just(MACHINE_ID), Just(NAME)]),
        pool in 0u8..3,
        backoff in any::<bool>(),
        facts in proptest::collection::vec(fact(), 0..16),
    ) {
        let now = Instant::now();
        let pool_key = [POOL, GARM_POOL, FOREIGN_POOL][usize::from(pool)];
        let row = Row {
            name: NAME.to_owned(),
            status,
            runner_id: runner_id.map(RunnerId),
            provider_id: provider_id.map(str::to_owned),
            pool_key: pool_key.to_owned(),
        };
        let health = if backoff {
            ProviderHealth { failures: 1, retry_at: Some(now + Duration::from_secs(1)) }
        } else {
            ProviderHealth::default()
        };
        let id = provider_id.unwrap_or(MACHINE_ID).to_owned();
        let mut core = match start {
            Start::Row => Teardown::new(row.clone(), ours(), health, now),
            Start::Unrecorded => {
                Teardown::unrecorded(NAME.to_owned(), id.clone(), pool_key, ours(), now)
            }
            Start::StrayRunner => {
                Teardown::stray_runner(RunnerId(runner_id.unwrap_or(1)), NAME.to_owned(), ours(), now)
            }
            Start::Superseded => {
                let key = PoolKey::parse(pool_key).expect("a valid pool key");
                Teardown::superseded(row.clone(), key, ours(), now)
            }
            // An orphan under our key (pool 0) or not; its registration busy when `backoff`.
            Start::Orphan => Teardown::orphan(
                Orphan { id: id.clone(), ..orphan(orphan_key(pool)) },
                CTL,
                &[
                    registered(0, runner_id.unwrap_or(1), NAME, backoff),
                    registered(1, 2, "ci-b", false),
                ],
                now,
            ),
        };
        let expected_pool = match (start, pool) {
            // Only a row of a pool the scale set does not serve is superseded, and it is
            // deleted under its own key.
            (Start::Superseded, 2) => Some(PoolOf::Recorded(
                PoolKey::parse(FOREIGN_POOL).expect("a valid pool key"),
            )),
            (Start::Superseded, _) => None,
            (Start::Orphan, 0) if !backoff => Some(PoolOf::Orphaned {
                provider: PROVIDER.to_owned(),
                key: orphan_key(0),
            }),
            (Start::Orphan, _) => None,
            (_, 0) => Some(PoolOf::Served),
            (_, 1) => Some(PoolOf::Inherited),
            _ => None,
        };
        let mut removable: HashSet<i64> = match start {
            Start::Row | Start::Superseded => runner_id.into_iter().collect(),
            Start::Unrecorded | Start::Orphan => HashSet::new(),
            Start::StrayRunner => [runner_id.unwrap_or(1)].into_iter().collect(),
        };
        let mut commands = 0usize;
        let mut ended_at = None;
        let mut clock = now;
        for fact in facts.into_iter().chain(std::iter::once(Fact::RowDeleted)) {
            while let Some(command) = core.poll_command() {
                commands += 1;
                prop_assert!(commands <= 12, "more commands than a teardown has steps");
                if let Some(at) = ended_at {
                    prop_assert!(
                        matches!(command, Command::ProviderWorked | Command::ProviderFailed),
                        "{command:?} after the end at {at}"
                    );
                }
                match command {
                    Command::DeleteInstance { name, pool, id: sent } => {
                        prop_assert_eq!(Some(pool), expected_pool.clone());
                        prop_assert_eq!(&name, NAME);
                        match start {
                            Start::Unrecorded | Start::Orphan => prop_assert_eq!(&sent, &id),
                            _ => prop_assert!(
                                sent == NAME || Some(sent.as_str()) == provider_id,
                                "deleted by {sent}"
                            ),
                        }
                        if matches!(start, Start::Row) {
                            prop_assert!(health.may_call(clock), "deleted during the back-off");
                        }
                    }
                    Command::RemoveRunner { id, name } => {
                        prop_assert_eq!(&name, NAME);
                        prop_assert!(removable.contains(&id.0), "removed runner {}", id.0);
                    }
                    // Only an orphan's idle registration of its name, in our pool.
                    Command::RemoveRegistered { entity, id, name } => {
                        prop_assert!(matches!(start, Start::Orphan));
                        prop_assert_eq!(&name, NAME);
                        prop_assert_eq!((entity, id.0), (0, runner_id.unwrap_or(1)));
                        prop_assert!(pool == 0 && !backoff);
                    }
                    Command::Transition { name, to } => {
                        prop_assert_eq!(&name, NAME);
                        prop_assert!(status.can_move_to(to) || to == InstanceStatus::Deleting);
                    }
                    _ => {}
                }
            }
            if core.outcome().is_some() && ended_at.is_none() {
                ended_at = Some(commands);
            }
            if core.outcome() == Some(Outcome::NotOurs) {
                prop_assert_eq!(commands, 0);
                prop_assert!(expected_pool.is_none());
            }
            // A superseded row's runner is registered with the old scale set: its name is
            // the check.
            if let Fact::RunnerFound(Some(found)) = &fact
                && found.name == NAME
                && !found.busy
                && (matches!(start, Start::Superseded)
                    || found.scale_set == OURS
                    || found.scale_set.0 == 0)
            {
                removable.insert(found.id.0);
            }
            clock += Duration::from_millis(100);
            core.handle(fact, clock);
        }
    }
}

#[test]
fn a_stray_runner_is_removed_kept_while_busy_or_found_gone() {
    let now = Instant::now();
    for (removal, outcome) in [
        (Removal::Removed, Outcome::Removed),
        (Removal::StillRunning, Outcome::Kept),
        (Removal::Gone, Outcome::AlreadyGone),
    ] {
        let mut core = Teardown::stray_runner(RunnerId(3), NAME.to_owned(), ours(), now);
        assert_eq!(
            core.poll_command(),
            Some(Command::RemoveRunner {
                id: RunnerId(3),
                name: NAME.to_owned()
            })
        );
        core.handle(Fact::RunnerRemoved(removal), now);
        assert_eq!(core.poll_command(), None);
        assert_eq!(core.outcome(), Some(outcome));
    }
}

#[test]
fn an_unrecorded_instance_under_a_pool_key_not_ours_is_not_deleted() {
    let now = Instant::now();
    let mut core = Teardown::unrecorded(
        NAME.to_owned(),
        MACHINE_ID.to_owned(),
        FOREIGN_POOL,
        ours(),
        now,
    );
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::NotOurs));
    let mut garm = Teardown::unrecorded(
        NAME.to_owned(),
        MACHINE_ID.to_owned(),
        GARM_POOL,
        ours(),
        now,
    );
    assert!(matches!(
        garm.poll_command(),
        Some(Command::DeleteInstance {
            pool: PoolOf::Inherited,
            ..
        })
    ));
}

fn superseded_scenario() -> impl Strategy<Value = (Scenario, &'static str)> {
    (
        scenario(),
        prop_oneof![
            3 => Just(OLD_POOL),
            1 => Just(OLD_GARM_POOL),
            1 => Just(POOL),
            1 => Just(GARM_POOL),
        ],
    )
        .prop_map(|(s, key)| {
            (
                Scenario {
                    // The retirement consults no back-off; names are unique.
                    backoff_ms: 0,
                    same_name_elsewhere: false,
                    ..s
                },
                key,
            )
        })
}

fn run_superseded(s: &Scenario, key: &str) -> Ran {
    let start = Instant::now();
    run_in(s, World::superseded(s, key, start), start, Kind::Superseded)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A superseded row's machine is deleted only under the key the row was recorded with,
    /// only once no runner of its name is busy, and nothing else is touched.
    #[test]
    fn a_superseded_retirement_deletes_only_under_the_recorded_key((s, key) in superseded_scenario()) {
        let ran = run_superseded(&s, key);
        prop_assert!(ran.world.violations.is_empty(), "{:?}", ran.world.violations);
        prop_assert!(ran.world.machines.iter().any(|m| m.name == "theirs"));
        prop_assert!(ran.world.machines.iter().any(|m| m.name == OTHER_MACHINE_NAME));
        prop_assert!(ran.world.runners.contains_key(&STRANGER_ID));
        prop_assert!(
            !(s.provider_id == Some(true) && (s.claimed_by_other || s.refused))
                || ran.world.machines.iter().any(|m| m.name == "ci-c")
        );
    }

    #[test]
    fn a_row_of_a_served_pool_is_not_superseded(
        (s, key) in superseded_scenario().prop_filter("served", |(_, k)| *k == POOL || *k == GARM_POOL),
    ) {
        let ran = run_superseded(&s, key);
        prop_assert_eq!(ran.outcome, Some(Outcome::NotOurs));
        prop_assert_eq!(ran.world.commands, 0);
        prop_assert_eq!(ran.world.row.map(|r| r.status), Some(s.status));
    }

    #[test]
    fn a_superseded_busy_runner_keeps_its_machine_and_its_row_stops_counting(
        (s, key) in superseded_scenario().prop_map(|(s, key)| (Scenario {
            registered: Some(true),
            look_up: LookUp::Truthful,
            ..s
        }, if key == POOL || key == GARM_POOL { OLD_POOL } else { key })),
    ) {
        let ran = run_superseded(&s, key);
        prop_assert_eq!(ran.outcome, Some(Outcome::Kept));
        let expected = if s.status == InstanceStatus::Deleted {
            InstanceStatus::Deleted
        } else {
            InstanceStatus::Deleting
        };
        prop_assert_eq!(ran.world.row.map(|r| r.status), Some(expected));
        prop_assert!(
            s.status == InstanceStatus::Deleted
                || ran.world.machines.iter().any(|m| m.name == NAME)
        );
        prop_assert!(ran.world.runners.contains_key(&OUR_ID));
    }

    #[test]
    fn a_superseded_idle_or_gone_runner_frees_its_machine_whatever_crashes(
        (s, key) in superseded_scenario().prop_map(|(s, key)| (Scenario {
            registered: s.registered.map(|_| false),
            look_up: LookUp::Truthful,
            job_starts_at: None,
            ..s
        }, if key == POOL || key == GARM_POOL { OLD_GARM_POOL } else { key })),
    ) {
        let ran = run_superseded(&s, key);
        prop_assert_eq!(ran.outcome, Some(Outcome::Removed), "restarts {}", ran.restarts);
        prop_assert!(ran.world.row.is_none());
        prop_assert!(!ran.world.runners.contains_key(&OUR_ID));
        prop_assert!(!ran.world.machines.iter().any(|m| m.name == NAME));
        prop_assert_eq!(ran.world.notes.last(), Some(&Note::SupersededDeleted));
    }

    #[test]
    fn a_superseded_look_up_answered_for_another_name_touches_nothing(
        (s, key) in superseded_scenario().prop_map(|(s, key)| (Scenario {
            look_up: LookUp::OtherName,
            ..s
        }, if key == POOL || key == GARM_POOL { OLD_POOL } else { key })),
    ) {
        let ran = run_superseded(&s, key);
        prop_assert_eq!(ran.outcome, Some(Outcome::Unconfirmed));
        prop_assert!(ran.world.row.is_some());
        prop_assert!(
            s.status == InstanceStatus::Deleted
                || ran.world.machines.iter().any(|m| m.name == NAME)
        );
        prop_assert!(ran.world.runners.values().any(|r| r.name == "ci-stranger"));
    }
}

fn old_key() -> PoolKey {
    PoolKey::parse(OLD_POOL).expect("a valid pool key")
}

fn superseded_row(status: InstanceStatus, runner_id: Option<i64>) -> Row {
    Row {
        name: NAME.to_owned(),
        status,
        runner_id: runner_id.map(RunnerId),
        provider_id: None,
        pool_key: OLD_POOL.to_owned(),
    }
}

#[test]
fn a_superseded_row_stops_counting_then_goes_once_its_idle_runner_is_removed() {
    let now = Instant::now();
    let row = superseded_row(InstanceStatus::Running, Some(OUR_ID));
    let mut core = Teardown::superseded(row, old_key(), ours(), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::Transition {
            name: NAME.to_owned(),
            to: InstanceStatus::Deleting
        })
    );
    assert_eq!(core.poll_command(), None);
    core.handle(Fact::Moved, now);
    assert_eq!(
        core.poll_command(),
        Some(Command::Note {
            note: Note::Superseded,
            name: NAME.to_owned(),
            pool_key: OLD_POOL.to_owned()
        })
    );
    assert_eq!(
        core.poll_command(),
        Some(Command::GetRunner {
            id: RunnerId(OUR_ID)
        })
    );
    core.handle(
        Fact::RunnerFound(Some(FoundRunner {
            id: RunnerId(OUR_ID),
            name: NAME.to_owned(),
            scale_set: OLD_SET,
            busy: false,
        })),
        now,
    );
    assert_eq!(
        core.poll_command(),
        Some(Command::RemoveRunner {
            id: RunnerId(OUR_ID),
            name: NAME.to_owned()
        })
    );
    core.handle(Fact::RunnerRemoved(Removal::Removed), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteInstance {
            name: NAME.to_owned(),
            pool: PoolOf::Recorded(old_key()),
            id: NAME.to_owned(),
        })
    );
    core.handle(Fact::InstanceDeleted, now);
    // No back-off is fed: the old pool's deletes are not the served provider's health.
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteRow {
            name: NAME.to_owned()
        })
    );
    assert_eq!(core.outcome(), None);
    core.handle(Fact::RowDeleted, now);
    assert_eq!(
        core.poll_command(),
        Some(Command::Note {
            note: Note::SupersededDeleted,
            name: NAME.to_owned(),
            pool_key: OLD_POOL.to_owned()
        })
    );
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Removed));
}

#[test]
fn a_superseded_runner_that_is_busy_or_took_a_job_keeps_its_machine() {
    let now = Instant::now();
    let deleting = superseded_row(InstanceStatus::Deleting, Some(OUR_ID));
    let mut core = Teardown::superseded(deleting.clone(), old_key(), ours(), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::GetRunner {
            id: RunnerId(OUR_ID)
        })
    );
    core.handle(
        Fact::RunnerFound(Some(FoundRunner {
            id: RunnerId(OUR_ID),
            name: NAME.to_owned(),
            scale_set: OLD_SET,
            busy: true,
        })),
        now,
    );
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Kept));

    let mut core = Teardown::superseded(deleting, old_key(), ours(), now);
    core.poll_command();
    core.handle(
        Fact::RunnerFound(Some(FoundRunner {
            id: RunnerId(OUR_ID),
            name: NAME.to_owned(),
            scale_set: OLD_SET,
            busy: false,
        })),
        now,
    );
    core.poll_command();
    core.handle(Fact::RunnerRemoved(Removal::StillRunning), now);
    // Kept, and not marked busy: the row stays `deleting`.
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Kept));
}

#[test]
fn a_superseded_row_without_a_machine_or_runner_is_only_forgotten() {
    let now = Instant::now();
    let row = superseded_row(InstanceStatus::Deleted, None);
    let mut core = Teardown::superseded(row, old_key(), ours(), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::FindRunner {
            name: NAME.to_owned()
        })
    );
    core.handle(Fact::RunnerFound(None), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteRow {
            name: NAME.to_owned()
        })
    );
    // A gone runner of a `deleting` row: the machine, then the row.
    let row = superseded_row(InstanceStatus::Deleting, None);
    let mut core = Teardown::superseded(row, old_key(), ours(), now);
    core.poll_command();
    core.handle(Fact::RunnerFound(None), now);
    assert!(matches!(
        core.poll_command(),
        Some(Command::DeleteInstance { .. })
    ));
    core.handle(Fact::InstanceDeleteFailed, now);
    // The failure is the executor's to report; no back-off is fed and the row stays.
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Deferred));
}

#[test]
fn a_superseded_retirement_refuses_a_served_key_or_a_key_not_the_rows() {
    let now = Instant::now();
    for key in [POOL, GARM_POOL] {
        let row = Row {
            pool_key: key.to_owned(),
            ..superseded_row(InstanceStatus::Running, Some(OUR_ID))
        };
        let parsed = PoolKey::parse(key).expect("a valid pool key");
        let mut core = Teardown::superseded(row, parsed, ours(), now);
        assert_eq!(core.poll_command(), None, "{key}");
        assert_eq!(core.outcome(), Some(Outcome::NotOurs), "{key}");
    }
    let row = superseded_row(InstanceStatus::Running, Some(OUR_ID));
    let other = PoolKey::parse(OLD_GARM_POOL).expect("a valid pool key");
    let mut core = Teardown::superseded(row, other, ours(), now);
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::NotOurs));
}

/// The controller whose pools the orphan sweep retires.
const CTL: uuid::Uuid = uuid::Uuid::from_u128(0x3f2a_9c1e_77b0_4d4e_9a55_0123_4567_89ab);
const ORPHAN_ID: &str = "i-orphan";
const PROVIDER: &str = "lxd";

fn orphan_key(which: u8) -> PoolKey {
    match which {
        0 => crate::pool_keys::pool_key(CTL, 4),
        1 => crate::pool_keys::pool_key(uuid::Uuid::from_u128(2), 4),
        _ => PoolKey::parse(GARM_POOL).expect("a valid pool key"),
    }
}

fn orphan(key: PoolKey) -> Orphan {
    Orphan {
        name: NAME.to_owned(),
        id: ORPHAN_ID.to_owned(),
        provider: PROVIDER.to_owned(),
        key,
    }
}

fn registered(entity: usize, id: i64, name: &str, busy: bool) -> Registered {
    Registered {
        entity,
        id,
        name: name.to_owned(),
        busy,
    }
}

/// GitHub on several entities and one provider, as the orphan sweep sees them.
struct Sweep {
    /// (entity, id) → (name, busy).
    runners: BTreeMap<(usize, i64), (String, bool)>,
    /// The registrations the core was told of: those it may remove (idle, of its name).
    removable: HashSet<(usize, i64)>,
    machine: bool,
    fail_delete: bool,
    violations: Vec<String>,
    commands: usize,
}

impl Sweep {
    fn execute(&mut self, command: Command, key: &PoolKey) -> Option<Fact> {
        self.commands += 1;
        match command {
            Command::RemoveRegistered { entity, id, name } => {
                if name != NAME || !self.removable.contains(&(entity, id.0)) {
                    self.violations
                        .push(format!("removed {} on entity {entity}", id.0));
                }
                let removal = match self.runners.get(&(entity, id.0)) {
                    Some((_, true)) => Removal::StillRunning,
                    Some(_) => {
                        self.runners.remove(&(entity, id.0));
                        Removal::Removed
                    }
                    None => Removal::Gone,
                };
                Some(Fact::RegistrationRemoved {
                    entity,
                    id,
                    removal,
                })
            }
            Command::DeleteInstance { name, pool, id } => {
                let expected = PoolOf::Orphaned {
                    provider: PROVIDER.to_owned(),
                    key: key.clone(),
                };
                if pool != expected || id != ORPHAN_ID || name != NAME {
                    self.violations.push(format!("deleted {id} in {pool:?}"));
                }
                if crate::pool_keys::our_pool(key.as_str(), CTL).is_none() {
                    self.violations
                        .push("deleted in a pool not ours".to_owned());
                }
                if self.runners.values().any(|(n, busy)| n == NAME && *busy) {
                    self.violations
                        .push("deleted the machine of a busy runner".to_owned());
                }
                if self.fail_delete {
                    return Some(Fact::InstanceDeleteFailed);
                }
                self.machine = false;
                Some(Fact::InstanceDeleted)
            }
            other => {
                self.violations.push(format!("{other:?} in the sweep"));
                None
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// An orphan is deleted only in its own pool of ours at the provider that listed it, only
    /// after every idle registration of its name is removed and none is busy; a runner of
    /// another name, or busy, is never removed.
    #[test]
    fn an_orphan_is_retired_only_when_ours_and_no_runner_of_its_name_is_busy(
        registrations in proptest::collection::vec(proptest::option::of(any::<bool>()), 0..4),
        which in prop_oneof![3 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
        job_starts_at in proptest::option::of(0usize..5),
        fail_delete in any::<bool>(),
        redeliver in proptest::collection::vec(0usize..6, 0..3),
    ) {
        let key = orphan_key(which);
        let mut told = vec![registered(0, 99, "ci-stranger", false)];
        for (entity, busy) in registrations.iter().enumerate() {
            if let Some(busy) = busy {
                told.push(registered(entity, 100 + i64::try_from(entity).unwrap_or(0), NAME, *busy));
            }
        }
        let mut sweep = Sweep {
            runners: told.iter().map(|r| ((r.entity, r.id), (r.name.clone(), r.busy))).collect(),
            removable: told.iter().filter(|r| r.name == NAME && !r.busy).map(|r| (r.entity, r.id)).collect(),
            machine: true,
            fail_delete,
            violations: Vec::new(),
            commands: 0,
        };
        let busy_at_start = told.iter().any(|r| r.name == NAME && r.busy);
        let now = Instant::now();
        let mut core = Teardown::orphan(orphan(key.clone()), CTL, &told, now);
        let mut step = 0;
        while let Some(command) = core.poll_command() {
            step += 1;
            prop_assert!(step <= 8, "no end within 8 commands");
            if job_starts_at == Some(step) {
                for (name, busy) in sweep.runners.values_mut() {
                    if name == NAME {
                        *busy = true;
                    }
                }
            }
            if let Some(fact) = sweep.execute(command, &key) {
                core.handle(fact.clone(), now);
                if redeliver.contains(&step) {
                    core.handle(fact, now);
                }
            }
        }
        prop_assert!(sweep.violations.is_empty(), "{:?}", sweep.violations);
        prop_assert!(sweep.runners.contains_key(&(0, 99)), "a stranger was removed");
        let outcome = core.outcome();
        if which != 0 {
            prop_assert_eq!(outcome, Some(Outcome::NotOurs));
            prop_assert_eq!(sweep.commands, 0);
        } else if busy_at_start {
            prop_assert_eq!(outcome, Some(Outcome::Kept));
            prop_assert_eq!(sweep.commands, 0);
        } else if job_starts_at.is_none() && !fail_delete {
            prop_assert_eq!(outcome, Some(Outcome::Removed));
            prop_assert!(!sweep.machine);
            prop_assert!(!sweep.runners.values().any(|(n, _)| n == NAME));
        }
        match outcome {
            Some(Outcome::Kept) => prop_assert!(sweep.machine),
            Some(Outcome::Removed) => prop_assert!(!sweep.machine),
            Some(Outcome::Deferred) => prop_assert!(fail_delete && sweep.machine),
            Some(Outcome::NotOurs) => prop_assert!(which != 0),
            other => prop_assert!(false, "ended {other:?}"),
        }
    }
}

fn removed(entity: usize, id: i64, removal: Removal) -> Fact {
    Fact::RegistrationRemoved {
        entity,
        id: RunnerId(id),
        removal,
    }
}

#[test]
fn an_orphans_idle_runners_are_removed_on_each_entity_then_its_instance_deleted() {
    let now = Instant::now();
    let told = [
        registered(0, 11, NAME, false),
        registered(1, 12, "ci-other", false),
        registered(2, 13, NAME, false),
    ];
    let mut core = Teardown::orphan(orphan(orphan_key(0)), CTL, &told, now);
    assert_eq!(
        core.poll_command(),
        Some(Command::RemoveRegistered {
            entity: 0,
            id: RunnerId(11),
            name: NAME.to_owned()
        })
    );
    assert_eq!(core.poll_command(), None);
    core.handle(removed(0, 11, Removal::Removed), now);
    // A re-delivered answer is not the next registration's.
    core.handle(removed(0, 11, Removal::Removed), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::RemoveRegistered {
            entity: 2,
            id: RunnerId(13),
            name: NAME.to_owned()
        })
    );
    assert_eq!(core.poll_command(), None);
    // Nor is an answer for the same entity's other runner, or the same id on another entity.
    core.handle(removed(2, 11, Removal::Removed), now);
    core.handle(removed(0, 13, Removal::Removed), now);
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), None);
    core.handle(removed(2, 13, Removal::Gone), now);
    assert_eq!(
        core.poll_command(),
        Some(Command::DeleteInstance {
            name: NAME.to_owned(),
            pool: PoolOf::Orphaned {
                provider: PROVIDER.to_owned(),
                key: orphan_key(0)
            },
            id: ORPHAN_ID.to_owned(),
        })
    );
    core.handle(Fact::InstanceDeleted, now);
    // No row to forget, no back-off to feed.
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Removed));

    // One registration that took a job meanwhile: the others are still removed, the machine
    // stays.
    let mut core = Teardown::orphan(orphan(orphan_key(0)), CTL, &told, now);
    core.poll_command();
    core.handle(removed(0, 11, Removal::StillRunning), now);
    assert!(matches!(
        core.poll_command(),
        Some(Command::RemoveRegistered { entity: 2, .. })
    ));
    core.handle(removed(2, 13, Removal::Removed), now);
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Kept));
}

#[test]
fn an_orphan_busy_anywhere_or_in_a_pool_not_ours_is_left() {
    let now = Instant::now();
    let busy = [
        registered(0, 11, NAME, false),
        registered(1, 12, NAME, true),
    ];
    let mut core = Teardown::orphan(orphan(orphan_key(0)), CTL, &busy, now);
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Kept));
    for which in [1, 2] {
        let mut core = Teardown::orphan(orphan(orphan_key(which)), CTL, &[], now);
        assert_eq!(core.poll_command(), None);
        assert_eq!(core.outcome(), Some(Outcome::NotOurs));
    }
    // None registered: straight to the instance; a failed delete is the sweep's to report.
    let mut core = Teardown::orphan(orphan(orphan_key(0)), CTL, &[], now);
    assert!(matches!(
        core.poll_command(),
        Some(Command::DeleteInstance { .. })
    ));
    core.handle(Fact::InstanceDeleteFailed, now);
    assert_eq!(core.poll_command(), None);
    assert_eq!(core.outcome(), Some(Outcome::Deferred));
}
