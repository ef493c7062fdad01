//! The teardown core: a synchronous, clock-free state machine that decides and orders every
//! step of taking one runner down (its runner removed from GitHub, its instance deleted at
//! the provider, its row forgotten), in the shape of quinn-proto's `Connection`.
//!
//! It does no I/O and reads no clock. Facts come in through [`Teardown::handle`] with the
//! `now` the executor read; the I/O to do comes out through [`Teardown::poll_command`], one
//! [`Command`] at a time (the next one is decided by the answer to the last), and
//! [`Teardown::poll_timeout`] says when a teardown the provider's back-off deferred may be
//! tried again. The executor (`crate::scaler::execute`, in `scaler/executor.rs`) carries the
//! commands out with one `match` and feeds the answers back; it decides nothing.
//!
//! What it guarantees, whatever the answers (property-tested in `teardown/tests.rs` against a
//! hostile model of GitHub, the cloud and the store, with crashes between any two commands):
//!
//! - an instance is deleted only under the pool key its row was recorded with, and only when
//!   that key is one the scale set owns (served, or GARM's taken over);
//! - an instance is deleted by its recorded provider id only while no other row claims that id
//!   and no create answer with it was refused, else by its name ([`delete_id`]);
//! - a runner GitHub says is busy is never removed, and its instance never deleted;
//! - a runner found by name is acted on only if GitHub answered for that very name and for
//!   the served scale set (or none): an id answered for another name is never used;
//! - every step is idempotent, so a teardown restarted from the persisted row after a crash
//!   between any two commands finishes the same way.
//!
//! Besides a recorded runner ([`Teardown::new`]) it takes down an instance no row records
//! ([`Teardown::unrecorded`]), a runner no row records ([`Teardown::stray_runner`]), an
//! instance of a superseded GitHub scale set ([`Teardown::superseded`]: deleted under the pool
//! key its row was recorded with, once its runner is gone) and an orphaned instance the sweep
//! found under a pool key of ours that nothing stored names ([`Teardown::orphan`]: its runner
//! removed on every entity it is registered with, then the instance deleted at the provider
//! that listed it).

use std::collections::VecDeque;
use std::time::Instant;

use scaleset_github::{GithubScaleSetId, Removal, RunnerId};
use scaleset_provider::PoolKey;
use scaleset_store::InstanceStatus;
use uuid::Uuid;

use crate::claim::{Recorded, delete_id};
use crate::orphans::{Registered, old_runner};
use crate::pool_keys::our_pool;
use crate::provider_backoff::ProviderHealth;
use crate::reconcile::{AfterRemoval, after_removal, owns_found_runner, teardown};
use crate::superseded::{OldRunner, Retirement, is_superseded, retirement};

/// The I/O a teardown asks for, one at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Look the runner up on GitHub by its (unique) name: a row without a runner id may have
    /// been registered by an interrupted JIT POST. Answered by [`Fact::RunnerFound`].
    FindRunner {
        /// The row's name.
        name: String,
    },
    /// Read the runner GitHub registered under `id` (a superseded row's recorded runner).
    /// Answered by [`Fact::RunnerFound`].
    GetRunner {
        /// The row's runner id.
        id: RunnerId,
    },
    /// Remove the runner from GitHub. Answered by [`Fact::RunnerRemoved`].
    RemoveRunner {
        /// The runner's id.
        id: RunnerId,
        /// The row's name (for the log).
        name: String,
    },
    /// Remove a runner registered on one of the stored entities (the orphan sweep's
    /// `entity` index). Answered by [`Fact::RegistrationRemoved`].
    RemoveRegistered {
        /// Which entity's GitHub.
        entity: usize,
        /// The runner's id there.
        id: RunnerId,
        /// The orphaned instance's (and runner's) name.
        name: String,
    },
    /// Move the row to `to`. Answered by [`Fact::Moved`].
    Transition {
        /// The row's name.
        name: String,
        /// The status to move it to.
        to: InstanceStatus,
    },
    /// Read which rows claim `provider_id` and whether a create answer with it was refused.
    /// Answered by [`Fact::Claims`].
    LookUpClaims {
        /// The row's recorded provider id.
        provider_id: String,
    },
    /// Delete the instance at the provider. Answered by [`Fact::InstanceDeleted`] or
    /// [`Fact::InstanceDeleteFailed`].
    DeleteInstance {
        /// The row's name.
        name: String,
        /// The pool it is deleted in.
        pool: PoolOf,
        /// The id it is addressed by: its verified provider id, or its name.
        id: String,
    },
    /// Feed a delete that worked to the provider's back-off. Needs no answer.
    ProviderWorked,
    /// Feed the delete that failed to the provider's back-off (and flag the scale set when it
    /// says so). Needs no answer.
    ProviderFailed,
    /// Forget the row. Answered by [`Fact::RowDeleted`].
    DeleteRow {
        /// The row's name.
        name: String,
    },
    /// Append `note` to the scale set's events. Needs no answer.
    Note {
        /// What to say.
        note: Note,
        /// The row's name.
        name: String,
        /// The pool key it was recorded with.
        pool_key: String,
    },
}

/// An event a teardown appends (the executor renders its words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// A superseded row no longer counts, and is deleted once its runner is gone.
    Superseded,
    /// A superseded row's instance and row are gone.
    SupersededDeleted,
}

/// Which pool a delete goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolOf {
    /// The served pool.
    Served,
    /// GARM's pool, taken over (deleted with GARM's controller id).
    Inherited,
    /// The pool key a superseded row was recorded with, at the served scale set's provider.
    Recorded(PoolKey),
    /// A pool of ours nothing stored names, at the provider that listed it.
    Orphaned {
        /// The provider's name.
        provider: String,
        /// The pool's key.
        key: PoolKey,
    },
}

/// A runner GitHub answered a look-up by name with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRunner {
    /// Its id.
    pub id: RunnerId,
    /// The name GitHub answered with.
    pub name: String,
    /// The scale set it is registered for (0: none).
    pub scale_set: GithubScaleSetId,
    /// Whether GitHub says it runs a job.
    pub busy: bool,
}

/// A row claiming a provider id (name, and the provider id it was recorded with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The row's name.
    pub name: String,
    /// Its recorded provider id.
    pub provider_id: Option<String>,
}

/// The answer to a [`Command`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    /// What GitHub answered to [`Command::FindRunner`] (`None`: no runner of that name).
    RunnerFound(Option<FoundRunner>),
    /// What GitHub answered to [`Command::RemoveRunner`].
    RunnerRemoved(Removal),
    /// What GitHub answered to [`Command::RemoveRegistered`] (an orphan may have several
    /// registrations: the answer names which).
    RegistrationRemoved {
        /// The entity asked.
        entity: usize,
        /// The runner's id there.
        id: RunnerId,
        /// What it answered.
        removal: Removal,
    },
    /// The row moved ([`Command::Transition`]).
    Moved,
    /// The answer to [`Command::LookUpClaims`].
    Claims {
        /// The rows claiming the id (recorded with it, or named by it).
        claimed: Vec<Claim>,
        /// Whether a create answer with that id was refused.
        refused: bool,
    },
    /// The provider deleted the instance (or had none).
    InstanceDeleted,
    /// The provider failed to delete it.
    InstanceDeleteFailed,
    /// The row is forgotten (or was already).
    RowDeleted,
}

/// How a teardown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Runner, instance and row are gone.
    Removed,
    /// The runner runs a job: it keeps its machine (the row marked `busy` when it was
    /// `running`).
    Kept,
    /// The row is `deleting`; the provider is backing off or failed: the delete is tried
    /// again after the wait ([`Teardown::poll_timeout`]).
    Deferred,
    /// The row's pool key is none of the scale set's: nothing is done.
    NotOurs,
    /// GitHub answered the look-up by name with a runner of another name: that is no
    /// evidence the row's runner is gone (it may run a job), so nothing is done; a later pass
    /// asks again.
    Unconfirmed,
    /// A stray runner was not registered any more ([`Teardown::stray_runner`]).
    AlreadyGone,
}

/// An instance the orphan sweep found under a pool key of ours that nothing stored names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// Its name (and its runner's).
    pub name: String,
    /// The id the provider listed it with.
    pub id: String,
    /// The provider that listed it.
    pub provider: String,
    /// The pool key it was listed under.
    pub key: PoolKey,
}

/// What the core needs to know of the row it tears down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The row's (runner's and instance's) name.
    pub name: String,
    /// Its status when the teardown starts.
    pub status: InstanceStatus,
    /// Its GitHub runner id, if recorded.
    pub runner_id: Option<RunnerId>,
    /// Its recorded provider id.
    pub provider_id: Option<String>,
    /// The pool key it was recorded with.
    pub pool_key: String,
}

/// What the scale set owns: the GitHub scale set it serves and its pool keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ours {
    /// The served GitHub scale set.
    pub scale_set: GithubScaleSetId,
    /// The served pool's key.
    pub pool_key: String,
    /// GARM's pool key, when its runners were taken over.
    pub inherited_pool_key: Option<String>,
}

impl Ours {
    fn pool_of(&self, key: &str) -> Option<PoolOf> {
        if key == self.pool_key {
            Some(PoolOf::Served)
        } else if self.inherited_pool_key.as_deref() == Some(key) {
            Some(PoolOf::Inherited)
        } else {
            None
        }
    }
}

/// What a teardown takes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A recorded runner: its runner, its instance, its row ([`Teardown::new`]).
    Row,
    /// An instance no row records ([`Teardown::unrecorded`]).
    Instance,
    /// A runner no row records and no instance runs ([`Teardown::stray_runner`]).
    Runner,
    /// A row of a superseded GitHub scale set ([`Teardown::superseded`]).
    Superseded,
    /// An instance of an orphaned pool ([`Teardown::orphan`]).
    Orphan,
}

/// The answer the core waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Awaiting {
    Found,
    Removed,
    /// One of an orphan's registrations removed.
    Registration(usize, RunnerId),
    /// Moved to `deleting` (then the instance), or to `busy` (then done).
    Moved(InstanceStatus),
    Claims,
    Deleted,
    RowDeleted,
}

/// One runner's teardown (see the module doc). Driver loop: `while let Some(c) =
/// t.poll_command() { let fact = execute(c); if let Some(f) = fact { t.handle(f, now) } }`,
/// then [`Teardown::outcome`].
#[derive(Debug)]
pub struct Teardown {
    row: Row,
    pool: PoolOf,
    ours: Ours,
    health: ProviderHealth,
    now: Instant,
    /// The end of the back-off that deferred the delete.
    deferred_until: Option<Instant>,
    /// What is torn down.
    mode: Mode,
    queue: VecDeque<Command>,
    awaiting: Option<Awaiting>,
    outcome: Option<Outcome>,
    /// Whether the row's instance is still to be deleted (a superseded row `deleted` has
    /// none left).
    delete_step: bool,
    /// An orphan's idle registrations still to remove, as `(entity, runner id)`.
    removals: VecDeque<(usize, RunnerId)>,
    /// Whether an orphan's runner refused to go (it took a job): its machine stays.
    keep: bool,
}

impl Teardown {
    /// Starts the teardown of `row` at `now`, the provider's back-off as `health` says.
    pub fn new(row: Row, ours: Ours, health: ProviderHealth, now: Instant) -> Self {
        let mut core = Self {
            pool: PoolOf::Served,
            row,
            ours,
            health,
            now,
            deferred_until: None,
            mode: Mode::Row,
            queue: VecDeque::new(),
            awaiting: None,
            outcome: None,
            delete_step: true,
            removals: VecDeque::new(),
            keep: false,
        };
        match core.ours.pool_of(&core.row.pool_key) {
            None => core.outcome = Some(Outcome::NotOurs),
            Some(pool) => {
                core.pool = pool;
                match core.row.runner_id {
                    Some(id) => core.unregister(id),
                    None => {
                        let name = core.row.name.clone();
                        core.ask(Command::FindRunner { name }, Awaiting::Found);
                    }
                }
            }
        }
        core
    }

    /// Deletes an instance no row records, by the `provider_id` it was found or answered
    /// with, in the pool of `pool_key` (nothing, [`Outcome::NotOurs`], unless that pool is
    /// ours): one whose row went while its create was in flight (the answer was judged ours
    /// by `crate::claim::judge`), or one the reconciliation found under our pool key
    /// without a runner (`crate::reconcile`). No back-off is fed; a failure is the
    /// executor's to report ([`Outcome::Deferred`]).
    pub fn unrecorded(
        name: String,
        provider_id: String,
        pool_key: &str,
        ours: Ours,
        now: Instant,
    ) -> Self {
        let mut core = Self::bare(
            Mode::Instance,
            Row {
                name,
                status: InstanceStatus::Deleting,
                runner_id: None,
                provider_id: Some(provider_id.clone()),
                pool_key: pool_key.to_owned(),
            },
            ours,
            now,
        );
        match core.ours.pool_of(pool_key) {
            Some(pool) => {
                core.pool = pool;
                core.send_delete(provider_id);
            }
            None => core.outcome = Some(Outcome::NotOurs),
        }
        core
    }

    /// Removes from GitHub a runner of the served scale set that no row records and no
    /// instance runs (the reconciliation found it idle, `crate::reconcile`): removed
    /// ([`Outcome::Removed`]), refused as busy ([`Outcome::Kept`]), or gone already
    /// ([`Outcome::AlreadyGone`]).
    pub fn stray_runner(id: RunnerId, name: String, ours: Ours, now: Instant) -> Self {
        let mut core = Self::bare(
            Mode::Runner,
            Row {
                name,
                status: InstanceStatus::Running,
                runner_id: Some(id),
                provider_id: None,
                pool_key: String::new(),
            },
            ours,
            now,
        );
        core.unregister(id);
        core
    }

    /// Retires `row`, recorded under `key` (its own pool key, parsed) for a GitHub scale set
    /// that was deleted and replaced: marked `deleting` (it counts for nothing from then on),
    /// its runner looked up (by its recorded id, else by its name), then left to end its job
    /// when busy ([`Outcome::Kept`], asked again at the next reconciliation), removed when
    /// idle, and once it is gone the instance deleted under `key` and the row forgotten. A row
    /// of a pool the scale set serves is not superseded: nothing is done
    /// ([`Outcome::NotOurs`]). No back-off is consulted or fed; a failed delete is the
    /// executor's to report ([`Outcome::Deferred`]).
    pub fn superseded(row: Row, key: PoolKey, ours: Ours, now: Instant) -> Self {
        let steps = teardown(row.status);
        let mut core = Self::bare(Mode::Superseded, row, ours, now);
        core.delete_step = steps.delete_instance;
        let superseded = is_superseded(
            &core.row.pool_key,
            &core.ours.pool_key,
            core.ours.inherited_pool_key.as_deref(),
        );
        if !superseded || key.as_str() != core.row.pool_key {
            core.outcome = Some(Outcome::NotOurs);
            return core;
        }
        core.pool = PoolOf::Recorded(key);
        if steps.mark_deleting {
            let name = core.row.name.clone();
            core.ask(
                Command::Transition {
                    name,
                    to: InstanceStatus::Deleting,
                },
                Awaiting::Moved(InstanceStatus::Deleting),
            );
        } else {
            core.look_up();
        }
        core
    }

    /// Retires an instance the orphan sweep found under a pool key of `controller` that
    /// nothing stored names, whose scale set was proven gone (`crate::orphans`):
    /// left to end its job when a runner of its name is busy on any entity
    /// ([`Outcome::Kept`]), else every registration of its name (in `registered`) removed,
    /// then the instance deleted at the provider that listed it ([`Outcome::Removed`]). A
    /// pool key not exactly one of `controller`'s is never touched ([`Outcome::NotOurs`]).
    pub fn orphan(
        orphan: Orphan,
        controller: Uuid,
        registered: &[Registered],
        now: Instant,
    ) -> Self {
        let mut core = Self::bare(
            Mode::Orphan,
            Row {
                name: orphan.name,
                status: InstanceStatus::Deleting,
                runner_id: None,
                provider_id: Some(orphan.id),
                pool_key: orphan.key.as_str().to_owned(),
            },
            Ours {
                scale_set: GithubScaleSetId(0),
                pool_key: String::new(),
                inherited_pool_key: None,
            },
            now,
        );
        if our_pool(orphan.key.as_str(), controller).is_none() {
            core.outcome = Some(Outcome::NotOurs);
            return core;
        }
        core.pool = PoolOf::Orphaned {
            provider: orphan.provider,
            key: orphan.key,
        };
        let (state, idle) = old_runner(&core.row.name, registered);
        match retirement(state) {
            Retirement::AwaitJob => core.outcome = Some(Outcome::Kept),
            Retirement::RemoveRunner => {
                core.removals = idle
                    .into_iter()
                    .map(|(entity, id)| (entity, RunnerId(id)))
                    .collect();
                core.next_removal();
            }
            Retirement::DeleteInstance => core.delete_orphan(),
        }
        core
    }

    fn bare(mode: Mode, row: Row, ours: Ours, now: Instant) -> Self {
        Self {
            pool: PoolOf::Served,
            row,
            ours,
            health: ProviderHealth::default(),
            now,
            deferred_until: None,
            mode,
            queue: VecDeque::new(),
            awaiting: None,
            outcome: None,
            delete_step: true,
            removals: VecDeque::new(),
            keep: false,
        }
    }

    /// The next I/O to do, if any (one at a time: the next is decided by its answer).
    pub fn poll_command(&mut self) -> Option<Command> {
        self.queue.pop_front()
    }

    /// When to start the teardown again: the end of the provider's back-off, when the delete
    /// waited for it. After a failed delete the back-off's new end is the back-off planner's
    /// (fed by [`Command::ProviderFailed`]), not known here.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deferred_until
    }

    /// How the teardown ended (`None` while it runs).
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// The answer to the last command, at `now`. An answer the core does not wait for (a
    /// re-delivery, or one to a command it did not give) is ignored.
    pub fn handle(&mut self, fact: Fact, now: Instant) {
        self.now = now;
        let Some(awaiting) = self.awaiting else {
            return;
        };
        match (awaiting, fact) {
            (Awaiting::Found, Fact::RunnerFound(found)) if self.mode == Mode::Superseded => {
                self.awaiting = None;
                // The old scale set's id is not the served one: the name is the check. An
                // answer for another name says nothing of this row's runner.
                let (state, id) = match found {
                    Some(runner) if runner.name != self.row.name => {
                        self.outcome = Some(Outcome::Unconfirmed);
                        return;
                    }
                    Some(runner) if runner.busy => (OldRunner::Busy, None),
                    Some(runner) => (OldRunner::Idle, Some(runner.id)),
                    None => (OldRunner::Gone, None),
                };
                match (retirement(state), id) {
                    (Retirement::AwaitJob, _) => self.outcome = Some(Outcome::Kept),
                    (Retirement::RemoveRunner, Some(id)) => self.unregister(id),
                    _ => self.retire_instance(),
                }
            }
            (Awaiting::Found, Fact::RunnerFound(found)) => {
                self.awaiting = None;
                match found {
                    // GitHub answered for this name and for the served scale set (or none):
                    // the row's runner.
                    Some(runner)
                        if owns_found_runner(
                            &self.row.name,
                            &runner.name,
                            runner.scale_set,
                            self.ours.scale_set,
                        ) =>
                    {
                        if runner.busy {
                            // Not asked to go: a busy runner keeps its machine.
                            self.after(AfterRemoval::from_busy(self.row.status));
                        } else {
                            self.unregister(runner.id);
                        }
                    }
                    // An answer for another name says nothing of this one.
                    Some(runner) if runner.name != self.row.name => {
                        self.outcome = Some(Outcome::Unconfirmed);
                    }
                    // None of this name, or another scale set's (names are unique): none is
                    // registered for us, nothing to remove on GitHub.
                    _ => self.take_down(),
                }
            }
            (Awaiting::Removed, Fact::RunnerRemoved(removal)) => {
                self.awaiting = None;
                match (self.mode, removal) {
                    (Mode::Runner, Removal::Removed) => self.outcome = Some(Outcome::Removed),
                    (Mode::Runner, Removal::Gone) => self.outcome = Some(Outcome::AlreadyGone),
                    (Mode::Runner, Removal::StillRunning) => self.outcome = Some(Outcome::Kept),
                    // A superseded row is `deleting` (or `deleted`) by now: it is moved before
                    // its runner is looked up. So a runner that took a job after all keeps its
                    // machine until the job ends (`Keep`), and the row is never marked busy.
                    _ => self.after(after_removal(removal, self.row.status)),
                }
            }
            (
                Awaiting::Registration(entity, id),
                Fact::RegistrationRemoved {
                    entity: answered,
                    id: removed,
                    removal,
                },
            ) if answered == entity && removed == id => {
                self.awaiting = None;
                // The row-less machine is on its way out whatever GitHub says; a runner that
                // took a job after all keeps it until the job ends.
                if after_removal(removal, InstanceStatus::Deleting) != AfterRemoval::Proceed {
                    self.keep = true;
                }
                self.next_removal();
            }
            (Awaiting::Moved(to), Fact::Moved) => {
                self.awaiting = None;
                if to == InstanceStatus::Busy {
                    self.outcome = Some(Outcome::Kept);
                } else if self.mode == Mode::Superseded {
                    self.row.status = to;
                    self.note(Note::Superseded);
                    self.look_up();
                } else {
                    self.row.status = to;
                    self.delete_instance();
                }
            }
            (Awaiting::Claims, Fact::Claims { claimed, refused }) => {
                self.awaiting = None;
                let others: Vec<Recorded<'_>> = claimed
                    .iter()
                    .map(|c| Recorded {
                        name: &c.name,
                        provider_id: c.provider_id.as_deref(),
                    })
                    .collect();
                let row = Recorded {
                    name: &self.row.name,
                    provider_id: self.row.provider_id.as_deref(),
                };
                let refused_ids = if refused {
                    self.row.provider_id.iter().cloned().collect()
                } else {
                    std::collections::HashSet::new()
                };
                let id = delete_id(&row, &others, &refused_ids).to_owned();
                self.send_delete(id);
            }
            (Awaiting::Deleted, Fact::InstanceDeleted) => {
                self.awaiting = None;
                match self.mode {
                    Mode::Instance | Mode::Orphan => self.outcome = Some(Outcome::Removed),
                    Mode::Superseded => self.forget_row(),
                    Mode::Row | Mode::Runner => {
                        self.queue.push_back(Command::ProviderWorked);
                        self.forget_row();
                    }
                }
            }
            (Awaiting::Deleted, Fact::InstanceDeleteFailed) => {
                self.awaiting = None;
                // The row stays `deleting` (also across a restart) and is deleted again after
                // the back-off; an unrecorded instance is the reconciliation's to delete.
                if self.mode == Mode::Row {
                    self.queue.push_back(Command::ProviderFailed);
                }
                self.outcome = Some(Outcome::Deferred);
            }
            (Awaiting::RowDeleted, Fact::RowDeleted) => {
                self.awaiting = None;
                if self.mode == Mode::Superseded {
                    self.note(Note::SupersededDeleted);
                }
                self.outcome = Some(Outcome::Removed);
            }
            // Not the answer waited for: a re-delivery or a stray.
            _ => {}
        }
    }

    fn note(&mut self, note: Note) {
        self.queue.push_back(Command::Note {
            note,
            name: self.row.name.clone(),
            pool_key: self.row.pool_key.clone(),
        });
    }

    /// A superseded row's runner: by its recorded id, else by its name (an interrupted JIT
    /// POST may have registered it; names are unique).
    fn look_up(&mut self) {
        match self.row.runner_id {
            Some(id) => self.ask(Command::GetRunner { id }, Awaiting::Found),
            None => {
                let name = self.row.name.clone();
                self.ask(Command::FindRunner { name }, Awaiting::Found);
            }
        }
    }

    /// A superseded row's runner is gone: its instance (unless it has none), then the row.
    fn retire_instance(&mut self) {
        if self.delete_step {
            self.delete_instance();
        } else {
            self.forget_row();
        }
    }

    /// The next idle registration of an orphan to remove; once none is left, its instance
    /// (unless a runner refused to go).
    fn next_removal(&mut self) {
        match self.removals.pop_front() {
            Some((entity, id)) => {
                let name = self.row.name.clone();
                self.ask(
                    Command::RemoveRegistered { entity, id, name },
                    Awaiting::Registration(entity, id),
                );
            }
            None if self.keep => self.outcome = Some(Outcome::Kept),
            None => self.delete_orphan(),
        }
    }

    /// An orphan is deleted by the id the provider listed it with.
    fn delete_orphan(&mut self) {
        let id = self.row.provider_id.clone().unwrap_or_default();
        self.send_delete(id);
    }

    fn forget_row(&mut self) {
        let name = self.row.name.clone();
        self.ask(Command::DeleteRow { name }, Awaiting::RowDeleted);
    }

    fn ask(&mut self, command: Command, awaiting: Awaiting) {
        self.queue.push_back(command);
        self.awaiting = Some(awaiting);
    }

    fn unregister(&mut self, id: RunnerId) {
        let name = self.row.name.clone();
        self.ask(Command::RemoveRunner { id, name }, Awaiting::Removed);
    }

    fn after(&mut self, after: AfterRemoval) {
        match after {
            AfterRemoval::Proceed => self.take_down(),
            AfterRemoval::MarkBusy => {
                let name = self.row.name.clone();
                self.ask(
                    Command::Transition {
                        name,
                        to: InstanceStatus::Busy,
                    },
                    Awaiting::Moved(InstanceStatus::Busy),
                );
            }
            AfterRemoval::Keep => self.outcome = Some(Outcome::Kept),
        }
    }

    /// The runner is gone: the row to `deleting`, then the instance, then the row.
    fn take_down(&mut self) {
        let steps = teardown(self.row.status);
        if steps.mark_deleting {
            let name = self.row.name.clone();
            self.ask(
                Command::Transition {
                    name,
                    to: InstanceStatus::Deleting,
                },
                Awaiting::Moved(InstanceStatus::Deleting),
            );
        } else if steps.delete_instance {
            self.delete_instance();
        } else {
            self.forget_row();
        }
    }

    fn delete_instance(&mut self) {
        if !self.health.may_call(self.now) {
            self.outcome = Some(Outcome::Deferred);
            self.deferred_until = self.health.retry_at;
            return;
        }
        match self.row.provider_id.clone() {
            Some(id) if id != self.row.name => {
                self.ask(Command::LookUpClaims { provider_id: id }, Awaiting::Claims);
            }
            _ => {
                let id = self.row.name.clone();
                self.send_delete(id);
            }
        }
    }

    fn send_delete(&mut self, id: String) {
        let name = self.row.name.clone();
        let pool = self.pool.clone();
        self.ask(
            Command::DeleteInstance { name, pool, id },
            Awaiting::Deleted,
        );
    }
}

impl AfterRemoval {
    /// What follows a runner GitHub says is busy, for a row in `status`: as if its removal
    /// was refused.
    fn from_busy(status: InstanceStatus) -> Self {
        after_removal(Removal::StillRunning, status)
    }
}

#[cfg(test)]
mod tests;
