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
//! - [`owns_found_runner`], [`after_removal`] and [`teardown`]: the steps of removing one
//!   runner everywhere (GitHub, then the provider, then the row).
//!
//! What holds for every answer (proven by the property tests beside it): nothing is acted on
//! that the provider did not list under our pool key or that is not a runner of this scale set
//! with our runner-name prefix; a runner GitHub reports busy is never removed, nor its machine
//! deleted (GitHub's `JobStillRunningException` guards the removals planned without a fresh
//! look, and [`after_removal`] then keeps the machine).

use std::collections::HashSet;

use scaleset_github::{Removal, RunnerId, RunnerReference, ScaleSetId as GitHubScaleSetId};
use scaleset_provider::ProviderInstance;
use scaleset_store::{Instance, InstanceStatus, Timestamp};

/// The facts of one reconciliation pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct World<'a> {
    /// The GitHub scale set this task serves.
    pub(crate) scale_set: GitHubScaleSetId,
    /// The runner-name prefix of our runners, with its dash (`<runner_prefix>-`).
    pub(crate) prefix: &'a str,
    /// The names of every row the store holds for the scale set (of any pool key).
    pub(crate) recorded: &'a HashSet<String>,
    /// What the provider lists under our pool key (it lists nothing else).
    pub(crate) at_provider: &'a [ProviderInstance],
    /// Every runner GitHub lists (of any scale set).
    pub(crate) runners: &'a [RunnerReference],
}

/// One thing a reconciliation pass does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action<'a> {
    /// An instance under our pool key the store does not know, whose runner GitHub still has:
    /// record it again (`running`, with both ids and a fresh bootstrap deadline).
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
}

fn is_busy(runner: &RunnerReference) -> bool {
    runner.busy == Some(true)
}

/// Plans one reconciliation pass: first what becomes of each unrecorded instance, then of each
/// stray runner (see [`Action`]).
pub(crate) fn reconcile<'a>(world: &World<'a>) -> Vec<Action<'a>> {
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
    let on_provider: HashSet<&str> = world.at_provider.iter().map(|i| i.name.as_str()).collect();
    for runner in world.runners.iter().filter(ours).filter(|r| {
        r.name.starts_with(world.prefix)
            && !world.recorded.contains(&r.name)
            && !on_provider.contains(r.name.as_str())
    }) {
        actions.push(if is_busy(runner) {
            Action::AwaitJob(runner)
        } else {
            Action::RemoveRunner(runner)
        });
    }
    actions
}

/// What recovery does with one row of the GitHub scale set this task serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recovery {
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
pub(crate) fn recovery(status: InstanceStatus, runner: Option<i64>) -> Recovery {
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
pub(crate) fn recovered_creating(at_provider: bool) -> Recovery {
    if at_provider {
        Recovery::RecordProviderId
    } else {
        Recovery::Remove
    }
}

/// Recovery of a `running` or `busy` row, after GitHub was asked for its runner: a runner
/// that is gone finished (ephemeral) while nobody was listening.
pub(crate) fn recovered_registered(runner: Option<&RunnerReference>) -> Recovery {
    match runner {
        Some(_) => Recovery::Keep,
        None => Recovery::Remove,
    }
}

/// Whether `instance` is to be checked against its bootstrap deadline at `now`: a `running`
/// row of the served GitHub scale set (`current`) whose deadline has come, not yet seen online
/// in this pass (`seen_online`).
pub(crate) fn deadline_due(
    instance: &Instance,
    current: bool,
    now: Timestamp,
    seen_online: bool,
) -> bool {
    instance.status == InstanceStatus::Running
        && current
        && instance.bootstrap_deadline.is_some_and(|d| d <= now)
        && !seen_online
}

/// What a runner past its bootstrap deadline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bootstrap {
    /// Online or busy: it came up (remembered; not asked about again in this pass).
    Online,
    /// Not registered, or registered and offline: remove it everywhere.
    Late,
}

/// Whether a runner past its deadline came up, from what GitHub says of it (`None`: not
/// registered, or the row has no runner id).
pub(crate) fn bootstrap(runner: Option<&RunnerReference>) -> Bootstrap {
    match runner {
        Some(r) if r.status.eq_ignore_ascii_case("online") || is_busy(r) => Bootstrap::Online,
        _ => Bootstrap::Late,
    }
}

/// Whether a runner found by the name of a row without a runner id is the row's: registered for
/// the served scale set, or for none (an interrupted JIT POST registers by name; runner names
/// are unique, so another scale set's runner of that name is not ours).
pub(crate) fn owns_found_runner(runner: &RunnerReference, scale_set: GitHubScaleSetId) -> bool {
    runner.runner_scale_set_id == scale_set || runner.runner_scale_set_id.0 == 0
}

/// Whether the row a `JobCompleted` named is retired by the scale set serving it: only a row of
/// that scale set (the message names a runner by name; a row of another scale set of ours with
/// that name is that scale set's to retire, never this one's).
pub(crate) fn retires_completed(row: &Instance, served: scaleset_store::ScaleSetId) -> bool {
    row.scale_set_id == served
}

/// What follows GitHub's answer to removing the runner of a row in `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterRemoval {
    /// The runner is gone: delete the instance and the row ([`teardown`]).
    Proceed,
    /// It runs a job: keep the machine, and mark the row `busy` so it counts as such.
    MarkBusy,
    /// It runs a job (the row already says so or is on its way out): keep the machine.
    Keep,
}

/// The step after removing the runner of a row in `status`: a runner that is still running a
/// job keeps its machine.
pub(crate) fn after_removal(removal: Removal, status: InstanceStatus) -> AfterRemoval {
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
pub(crate) struct Teardown {
    /// Move the row to `deleting` before asking the provider.
    pub(crate) mark_deleting: bool,
    /// Ask the provider to delete the instance.
    pub(crate) delete_instance: bool,
}

/// The teardown of a row in `status` (see [`Teardown`]).
pub(crate) fn teardown(status: InstanceStatus) -> Teardown {
    Teardown {
        mark_deleting: !matches!(status, InstanceStatus::Deleting | InstanceStatus::Deleted),
        delete_instance: status != InstanceStatus::Deleted,
    }
}

#[cfg(test)]
mod tests;
