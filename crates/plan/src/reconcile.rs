//! The reconcile planner: every decision to remove a runner from GitHub, delete an instance at
//! the provider or forget a row of one scale set, from the facts the scaler gathered. Pure (no
//! I/O, no clock: "now" comes in as a value); the scaler (`scaler.rs`, `scaler/reconcile.rs`)
//! looks things up, hands the answers in, and carries out what comes back.
//!
//! - [`reconcile`]: one pass over GitHub's runners × the store's rows × the provider's
//!   instances listed under our pool key (DESIGN §5, "Reconciliation").
//! - [`recovery`] with [`recovered_creating`] and [`recovered_registered`]: what a crash left
//!   of each row of ours.
//! - [`deadline_due`] and [`bootstrap`]: runners not online by their bootstrap deadline.
//! - [`lifecycle`]: runners retired for their life so far (issue 33): a bootstrap reported
//!   `failed`, an instance the provider reports stopped or errored, a runner GitHub lists
//!   offline past its bootstrap deadline (left so by an outage), one past `max_lifetime`, one
//!   idle past `max_idle_lifetime` while no job waits.
//! - [`owns_found_runner`], [`after_removal`] and [`teardown`]: the steps of removing one
//!   runner everywhere (GitHub, then the provider, then the row), ordered by the teardown
//!   core (`crate::teardown`).
//!
//! What holds for every answer (proven by the property tests beside it): nothing is acted on
//! that the provider did not list under our pool key or that is not a runner of this scale set
//! with our runner-name prefix; a runner GitHub reports busy is never removed, nor its machine
//! deleted (GitHub's `JobStillRunningException` guards the removals planned without a fresh
//! look, and [`after_removal`] then keeps the machine).

use std::collections::HashSet;
use std::time::Duration;

use scaleset_github::{GithubScaleSetId, Removal, RunnerId, RunnerReference};
use scaleset_provider::{InstanceStatus as ProviderStatus, ProviderInstance};
use scaleset_store::{Instance, InstanceStatus, Timestamp};

/// The facts of one reconciliation pass.
#[derive(Debug, Clone, Copy)]
pub struct World<'a> {
    /// The GitHub scale set this task serves.
    pub scale_set: GithubScaleSetId,
    /// The runner-name prefix of our runners, with its dash (`<runner_prefix>-`).
    pub prefix: &'a str,
    /// The names of every row the store holds for the scale set (of any pool key).
    pub recorded: &'a HashSet<String>,
    /// What the provider lists under our pool key (it lists nothing else).
    pub at_provider: &'a [ProviderInstance],
    /// Every runner GitHub lists (of any scale set).
    pub runners: &'a [RunnerReference],
    /// What the scale set inherited from GARM, when it was taken over (issue 37).
    pub inherited: Option<Inherited<'a>>,
}

/// GARM's side of a scale set taken over from it (see [`crate::takeover`]).
#[derive(Debug, Clone, Copy)]
pub struct Inherited<'a> {
    /// GARM's runner-name prefix, with its dash.
    pub prefix: &'a str,
    /// What the provider lists under GARM's pool id and controller id.
    pub at_provider: &'a [ProviderInstance],
}

/// One thing a reconciliation pass does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// An instance under our pool key the store does not know, whose runner GitHub still has:
    /// record it again (status by [`rerecorded_status`], with both ids and a fresh bootstrap
    /// deadline).
    Record {
        /// The instance found at the provider.
        instance: &'a ProviderInstance,
        /// Its runner on GitHub.
        runner: &'a RunnerReference,
    },
    /// An instance under our pool key the store does not know, with no runner on GitHub (the
    /// JIT registration always precedes the create, so it never will have one): delete it.
    DeleteInstance(&'a ProviderInstance),
    /// An idle runner of this scale set with our prefix, known to neither the store nor the
    /// provider: remove it from GitHub.
    RemoveRunner(&'a RunnerReference),
    /// The same, but running a job: left alone until a later pass finds it idle.
    AwaitJob(&'a RunnerReference),
    /// An instance GARM left running under its pool id, named with its prefix, whose runner
    /// GitHub still has in this scale set: recorded under GARM's pool key (status by
    /// [`rerecorded_status`]), to be retired when its job ends (a busy one) or at once (an
    /// idle one, see [`lifecycle`]).
    Inherit {
        /// The instance found under GARM's pool id.
        instance: &'a ProviderInstance,
        /// Its runner on GitHub.
        runner: &'a RunnerReference,
    },
    /// An instance under GARM's pool id, named with its prefix, unrecorded, with no runner
    /// in this scale set (its job ended, or its runner was removed): deleted under GARM's
    /// pool, as GARM itself would.
    DeleteInherited(&'a ProviderInstance),
}

fn is_busy(runner: &RunnerReference) -> bool {
    runner.busy == Some(true)
}

/// Plans one reconciliation pass: first what becomes of each unrecorded instance (ours, then
/// GARM's of a taken-over set), then of each stray runner (see [`Action`]). Under GARM's pool
/// id only instances named with GARM's prefix are acted on (GARM made those); a runner with
/// GARM's prefix is judged like one of ours: never removed while busy.
pub fn reconcile<'a>(world: &World<'a>) -> Vec<Action<'a>> {
    let ours = |runner: &&RunnerReference| runner.runner_scale_set_id == world.scale_set;
    let mut actions = Vec::new();
    for instance in world
        .at_provider
        .iter()
        .filter(|i| !world.recorded.contains(&i.name))
    {
        let runner = world
            .runners
            .iter()
            .filter(ours)
            .find(|r| r.name == instance.name);
        actions.push(match runner {
            Some(runner) => Action::Record { instance, runner },
            None => Action::DeleteInstance(instance),
        });
    }
    let inherited = world.inherited.map_or(&[][..], |garm| garm.at_provider);
    if let Some(garm) = world.inherited {
        for instance in garm
            .at_provider
            .iter()
            .filter(|i| i.name.starts_with(garm.prefix) && !world.recorded.contains(&i.name))
        {
            let runner = world
                .runners
                .iter()
                .filter(ours)
                .find(|r| r.name == instance.name);
            actions.push(match runner {
                Some(runner) => Action::Inherit { instance, runner },
                None => Action::DeleteInherited(instance),
            });
        }
    }
    let on_provider: HashSet<&str> = world
        .at_provider
        .iter()
        .chain(inherited)
        .map(|i| i.name.as_str())
        .collect();
    let prefixed = |r: &RunnerReference| {
        r.name.starts_with(world.prefix)
            || world
                .inherited
                .is_some_and(|garm| r.name.starts_with(garm.prefix))
    };
    for runner in world.runners.iter().filter(ours).filter(|r| {
        prefixed(r) && !world.recorded.contains(&r.name) && !on_provider.contains(r.name.as_str())
    }) {
        actions.push(if is_busy(runner) {
            Action::AwaitJob(runner)
        } else {
            Action::RemoveRunner(runner)
        });
    }
    actions
}

/// The status a re-recorded instance ([`Action::Record`]) is written with: `busy` when GitHub
/// lists its runner running a job (it counts as busy at once: never planned as idle surplus,
/// never retired for its lifetime, and the metrics say so), else `running` (its bootstrap
/// deadline then asks whether it is online).
pub fn rerecorded_status(runner: &RunnerReference) -> InstanceStatus {
    if is_busy(runner) {
        InstanceStatus::Busy
    } else {
        InstanceStatus::Running
    }
}

/// What recovery does with one row of the GitHub scale set this task serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Nothing to do.
    Keep,
    /// Remove it everywhere (see [`after_removal`] and [`teardown`]).
    Remove,
    /// The provider was asked to create it: look it up there, then [`recovered_creating`].
    AskProvider,
    /// Look its runner up on GitHub, then [`recovered_registered`].
    AskGitHub(RunnerId),
    /// Found at the provider: record its provider id and mark it `running`.
    RecordProviderId,
}

/// What recovery does first with a row in `status` whose runner has the GitHub id `runner`.
pub fn recovery(status: InstanceStatus, runner: Option<i64>) -> Recovery {
    match (status, runner) {
        (InstanceStatus::Creating, _) => Recovery::AskProvider,
        (InstanceStatus::Running | InstanceStatus::Busy, Some(id)) => {
            Recovery::AskGitHub(RunnerId::from(id))
        }
        (InstanceStatus::Running | InstanceStatus::Busy, None) => Recovery::Keep,
        // Pending: the provider was never asked, so a registered runner has no machine.
        // Deleting, deleted or failed: finish the removal.
        _ => Recovery::Remove,
    }
}

/// Recovery of a `creating` row, after the provider was asked whether it has the instance.
pub fn recovered_creating(at_provider: bool) -> Recovery {
    if at_provider {
        Recovery::RecordProviderId
    } else {
        Recovery::Remove
    }
}

/// Recovery of a `running` or `busy` row, after GitHub was asked for its runner: a runner
/// that is gone finished (ephemeral) while nobody was listening.
pub fn recovered_registered(runner: Option<&RunnerReference>) -> Recovery {
    match runner {
        Some(_) => Recovery::Keep,
        None => Recovery::Remove,
    }
}

/// Whether `instance` is to be checked against its bootstrap deadline at `now`: a `running`
/// row of the served GitHub scale set (`current`) whose deadline has come, not yet seen online
/// in this pass (`seen_online`).
pub fn deadline_due(instance: &Instance, current: bool, now: Timestamp, seen_online: bool) -> bool {
    instance.status == InstanceStatus::Running
        && current
        && instance.bootstrap_deadline.is_some_and(|d| d <= now)
        && !seen_online
}

/// What a runner past its bootstrap deadline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bootstrap {
    /// Online or busy: it came up (remembered; not asked about again in this pass).
    Online,
    /// Not registered, or registered and offline: remove it everywhere.
    Late,
}

/// Whether a runner past its deadline came up, from what GitHub says of it (`None`: not
/// registered, or the row has no runner id).
pub fn bootstrap(runner: Option<&RunnerReference>) -> Bootstrap {
    match runner {
        Some(r) if r.status.eq_ignore_ascii_case("online") || is_busy(r) => Bootstrap::Online,
        _ => Bootstrap::Late,
    }
}

/// The lifetime settings of a scale set (zero: off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// How long a runner may idle while no job waits for it.
    pub max_idle_lifetime: Duration,
    /// How long a runner may live; past it, it goes once idle.
    pub max_lifetime: Duration,
}

/// What is known of one row for [`lifecycle`]; a fact not looked up in this pass is absent
/// (`None`, `false`), never taken as bad news.
#[derive(Debug, Clone, Copy)]
pub struct Life<'a> {
    /// The row.
    pub instance: &'a Instance,
    /// GitHub's listing of its runner, when GitHub was asked in this pass.
    pub runner: Option<&'a RunnerReference>,
    /// The status the provider lists it with, when the provider was asked in this pass.
    pub at_provider: Option<ProviderStatus>,
    /// Its instance reported its bootstrap `failed`.
    pub bootstrap_failed: bool,
}

/// The scale set's side of [`lifecycle`].
#[derive(Debug, Clone, Copy)]
pub struct Served<'a> {
    /// The pool key of the GitHub scale set served now.
    pub pool_key: &'a str,
    /// Our runner-name prefix, with its dash.
    pub prefix: &'a str,
    /// Now.
    pub now: Timestamp,
    /// The lifetime settings.
    pub limits: Limits,
    /// More jobs are assigned than runners run: an idle runner may be about to get one.
    pub job_waits: bool,
    /// GARM's pool key, for a scale set taken over from GARM: its rows are GARM's runners.
    pub inherited: Option<&'a str>,
}

/// Why [`lifecycle`] retires a runner (each is an event of that name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retire {
    /// Its instance reported its bootstrap `failed`: replaced at once, not at the deadline.
    BootstrapFailed,
    /// The provider lists its instance stopped or errored: it will not run a job.
    InstanceStopped,
    /// GitHub lists it offline after its bootstrap deadline (it came up, then its machine or
    /// its connection died, e.g. in an outage): no job will reach it.
    Offline,
    /// Older than `max_lifetime`, and idle.
    MaxLifetime,
    /// Idle longer than `max_idle_lifetime` while no job waits.
    MaxIdleLifetime,
    /// One of GARM's runners, taken over, and idle: ours come up in its place under our pool
    /// key (a busy one is retired when its job ends).
    Inherited,
    /// One of GARM's runners, taken over, that GitHub lists offline: registered but never
    /// booted (or its machine is gone). It can take no job; retired at once, like an idle one.
    InheritedOffline,
}

impl Retire {
    /// The event's reason code when a runner is retired for this reason.
    pub fn code(self) -> scaleset_store::ReasonCode {
        use scaleset_store::ReasonCode as Code;
        match self {
            Self::BootstrapFailed => Code::BootstrapFailed,
            Self::InstanceStopped => Code::InstanceStopped,
            Self::Offline => Code::RunnerOffline,
            Self::MaxLifetime => Code::MaxLifetime,
            Self::MaxIdleLifetime => Code::MaxIdleLifetime,
            Self::Inherited => Code::InheritedRunnerRetired,
            Self::InheritedOffline => Code::InheritedRunnerOffline,
        }
    }

    /// Why, for the event's text.
    pub fn reason(self) -> &'static str {
        match self {
            Self::BootstrapFailed => "its instance reported a failed bootstrap",
            Self::InstanceStopped => "the provider reports its instance stopped or errored",
            Self::Offline => "GitHub lists it offline past its bootstrap deadline",
            Self::MaxLifetime => "it is idle and older than max_lifetime",
            Self::MaxIdleLifetime => {
                "it has been idle longer than max_idle_lifetime, no job waiting"
            }
            Self::Inherited => {
                "it is an idle runner GARM left (taken over); ours replace it under our pool key"
            }
            Self::InheritedOffline => {
                "it is a runner GARM registered that GitHub lists offline (never booted, or its \
                 machine is gone; taken over): it can take no job; ours replace it under our \
                 pool key"
            }
        }
    }
}

/// The time from `then` to `now` (zero when the clock went back).
pub fn elapsed(then: Timestamp, now: Timestamp) -> Duration {
    let millis = now.unix_millis().saturating_sub(then.unix_millis());
    Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// Whether a limit (zero: off) is reached after `lived`.
fn reached(limit: Duration, lived: Duration) -> bool {
    !limit.is_zero() && lived >= limit
}

/// Whether one row is retired for its life so far, and why (the first reason that holds, in
/// [`Retire`]'s order). Only an idle runner of ours goes: a `running` row (not busy, not
/// asked for by an operator: that one is the scale planner's) of the served GitHub scale set's
/// pool key, named with our prefix, that GitHub does not list busy. Its age counts from when
/// it was recorded; its idleness from its last write (when it became `running`: an ephemeral
/// runner is never idle again after a job). An idle row under GARM's pool key (a taken-over
/// set) goes at once, [`Retire::InheritedOffline`] when GitHub lists its runner offline, else
/// [`Retire::Inherited`].
pub fn lifecycle(life: &Life<'_>, served: &Served<'_>) -> Option<Retire> {
    let row = life.instance;
    let ours = row.pool_key == served.pool_key && row.name.starts_with(served.prefix);
    let garms = served.inherited == Some(row.pool_key.as_str());
    let idle = row.status == InstanceStatus::Running
        && row.removal_requested_at.is_none()
        && !life.runner.is_some_and(is_busy);
    if !idle {
        return None;
    }
    let offline = life
        .runner
        .is_some_and(|r| r.status.eq_ignore_ascii_case("offline"));
    if garms {
        return Some(if offline {
            Retire::InheritedOffline
        } else {
            Retire::Inherited
        });
    }
    if !ours {
        return None;
    }
    let past_deadline = row.bootstrap_deadline.is_some_and(|d| d <= served.now);
    if life.bootstrap_failed {
        Some(Retire::BootstrapFailed)
    } else if matches!(
        life.at_provider,
        Some(ProviderStatus::Stopped | ProviderStatus::Error)
    ) {
        Some(Retire::InstanceStopped)
    } else if offline && past_deadline {
        Some(Retire::Offline)
    } else if reached(
        served.limits.max_lifetime,
        elapsed(row.created_at, served.now),
    ) {
        Some(Retire::MaxLifetime)
    } else if !served.job_waits
        && reached(
            served.limits.max_idle_lifetime,
            elapsed(row.updated_at, served.now),
        )
    {
        Some(Retire::MaxIdleLifetime)
    } else {
        None
    }
}

/// Whether a job waits for an idle runner: more jobs assigned (`assigned`, the last
/// statistics; unknown counts as waiting, so nothing idle is retired before the first plan)
/// than runners run (`busy`).
pub fn job_waits(assigned: Option<i64>, busy: usize) -> bool {
    assigned.is_none_or(|a| a > i64::try_from(busy).unwrap_or(i64::MAX))
}

/// Whether a runner GitHub answered a look-up by the name `asked` with is the row's: answered
/// for that very name (an answer naming another runner is never acted on), and registered for
/// the served scale set, or for none (an interrupted JIT POST registers by name; runner names
/// are unique, so another scale set's runner of that name is not ours).
pub fn owns_found_runner(
    asked: &str,
    answered: &str,
    registered: GithubScaleSetId,
    scale_set: GithubScaleSetId,
) -> bool {
    answered == asked && (registered == scale_set || registered.0 == 0)
}

/// Whether the row a `JobCompleted` named is retired by the scale set serving it: only a row of
/// that scale set (the message names a runner by name; a row of another scale set of ours with
/// that name is that scale set's to retire, never this one's).
pub fn retires_completed(row: &Instance, served: scaleset_store::ScaleSetId) -> bool {
    row.scale_set_id == served
}

/// What follows GitHub's answer to removing the runner of a row in `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterRemoval {
    /// The runner is gone: delete the instance and the row ([`teardown`]).
    Proceed,
    /// It runs a job: keep the machine, and mark the row `busy` so it counts as such.
    MarkBusy,
    /// It runs a job (the row already says so or is on its way out): keep the machine.
    Keep,
}

/// The step after removing the runner of a row in `status`: a runner that is still running a
/// job keeps its machine.
pub fn after_removal(removal: Removal, status: InstanceStatus) -> AfterRemoval {
    match removal {
        Removal::Removed | Removal::Gone => AfterRemoval::Proceed,
        Removal::StillRunning if status == InstanceStatus::Running => AfterRemoval::MarkBusy,
        // Still running, or an answer this version does not know: the machine stays.
        _ => AfterRemoval::Keep,
    }
}

/// How a row in `status`, whose runner is gone, is taken down: marked `deleting` first (unless
/// already), its instance deleted at the provider (unless already), then the row forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Teardown {
    /// Move the row to `deleting` before asking the provider.
    pub mark_deleting: bool,
    /// Ask the provider to delete the instance.
    pub delete_instance: bool,
}

/// The teardown of a row in `status` (see [`Teardown`]).
pub fn teardown(status: InstanceStatus) -> Teardown {
    Teardown {
        mark_deleting: !matches!(status, InstanceStatus::Deleting | InstanceStatus::Deleted),
        delete_instance: status != InstanceStatus::Deleted,
    }
}

#[cfg(test)]
mod tests;
