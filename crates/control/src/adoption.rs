//! The one adoption driver: it runs one `scaleset_adopt::Machine` to its outcome through the
//! real `scaleset-github` client, translating each [`Command`] into one client call and each
//! answer into a [`Fact`]. It is store-free: the controller's ensure step records intent,
//! outcome, checkpoints and metrics through [`Hooks`]; the whole-system tests run it against
//! the simulator with [`NoHooks`].
//!
//! It makes no decisions: every `if` here is a translation (which client error is which fact),
//! never a policy. It keeps the full [`Session`] of every session it opened, so a session the
//! outcome hands over (policy `any`) comes back with its queue token. A session the outcome
//! reports not closed (a `SessionNotClosed` retry, or attempts exhausted on one) is deleted
//! once more, best effort, so a leaked session under our owner can never later read as our
//! own stale session.
//!
//! It does not wait or retry: one [`run_once`] is one attempt. The caller bumps
//! `input.retry.attempt` and waits the outcome's hint between attempts.
//!
//! It stops when [`Hooks::cancel`] fires: a lookup, create or update in flight is dropped (as a
//! crash there would be: the intent recorded before a create makes the next run converge), a
//! session open or close is let finish, and every session the run still has open is deleted
//! before it returns [`Error::Cancelled`], so a clean stop leaves no session of ours behind.

use std::collections::BTreeMap;

use async_trait::async_trait;
use scaleset_adopt::{
    Command, CommandKind, CreateSpec, Fact, Failure, Input, Machine, Notice, Outcome, Patch,
    RetryReason, RunnerGroupId, ScaleSet as AdoptScaleSet, SessionId, Step,
};
use scaleset_github::{
    Client, Error as GitHubError, ErrorClass, Label, NewRunnerScaleSet,
    RunnerGroupId as GitHubRunnerGroupId, RunnerScaleSet, RunnerScaleSetPatch, RunnerSetting,
    Session, SessionGone,
};

use crate::error::{AdoptionStop, Error, chain};
use tokio_util::sync::CancellationToken;

/// What the embedder does around the driver's GitHub calls. Every method has a default that
/// does nothing, so [`NoHooks`] is the store-free driver.
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Called right before the create POST for `spec`. The controller records its intent here,
    /// so a crash after the POST converges on the next run without a duplicate. An error stops
    /// the run before anything is created.
    async fn before_create(&self, _spec: &CreateSpec) -> Result<(), Error> {
        Ok(())
    }

    /// Called when GitHub answered the create POST for `spec` with the new scale set, before
    /// the machine sees it.
    async fn created(&self, _spec: &CreateSpec) {}

    /// A token whose cancellation stops the run (see the module documentation); `None` runs
    /// it to its outcome.
    fn cancel(&self) -> Option<&CancellationToken> {
        None
    }
}

/// No hooks: the driver alone, with nothing recorded.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}

/// What one run of the machine did and how it ended.
#[derive(Debug)]
pub struct Run {
    /// The machine's outcome.
    pub outcome: Outcome,
    /// Every command the machine issued, in order.
    pub commands: Vec<Command>,
    /// The full session behind `Outcome::Ready { session: Some(..) }`, when one was handed over.
    pub session: Option<Session>,
    /// Sessions the outcome reported not closed that the driver deleted afterwards.
    pub deleted_leaks: Vec<String>,
}

impl Run {
    /// The notices of a `Ready` outcome (empty for any other).
    pub fn outcome_notices(&self) -> &[Notice] {
        match &self.outcome {
            Outcome::Ready { notices, .. } => notices,
            _ => &[],
        }
    }

    /// How many commands of this kind the run issued.
    pub fn count(&self, kind: CommandKind) -> usize {
        self.commands.iter().filter(|c| c.kind() == kind).count()
    }
}

/// Runs one attempt: a fresh [`Machine`] for `input`, driven until it is done, through
/// `client`, telling `hooks` about the create and every call.
///
/// # Errors
///
/// [`Error::Adoption`] naming the command for a client failure that is not an answer from
/// GitHub (invalid configuration, a request that cannot be encoded, a 2xx body that cannot be
/// decoded, an id out of range): the machine has no fact for those, so the run stops, never
/// adopting or creating on them. Also any misuse the machine reports (a fact that does not
/// fit, a driver bug), and whatever [`Hooks::before_create`] returns.
pub async fn run_once<H: Hooks>(client: &Client, input: Input, hooks: &H) -> Result<Run, Error> {
    let name = input.desired.name.clone();
    let adoption = |stop: AdoptionStop| Error::Adoption {
        scale_set: name.clone(),
        stop,
    };
    let mut machine = Machine::new(input);
    let mut step = machine.start();
    let mut commands = Vec::new();
    let mut opened: BTreeMap<String, Session> = BTreeMap::new();
    loop {
        match step {
            Step::Do(command) => {
                let cancel = hooks.cancel();
                if cancel.is_some_and(CancellationToken::is_cancelled) {
                    close_opened(client, &opened).await;
                    return Err(Error::Cancelled {
                        scale_set: name.clone(),
                    });
                }
                tracing::debug!(command = %command.kind(), "adoption command");
                commands.push(command.clone());
                if let Command::Create(spec) = &command {
                    hooks.before_create(spec).await?;
                }
                // A session open or close runs to its answer: dropped in flight, it could leave
                // a session on GitHub whose id we never learn.
                let raced = match cancel {
                    Some(cancel)
                        if !matches!(
                            command,
                            Command::OpenSession { .. } | Command::CloseSession { .. }
                        ) =>
                    {
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => None,
                            fact = execute(client, &command, &mut opened, hooks) => Some(fact),
                        }
                    }
                    _ => Some(execute(client, &command, &mut opened, hooks).await),
                };
                let Some(fact) = raced else {
                    close_opened(client, &opened).await;
                    return Err(Error::Cancelled {
                        scale_set: name.clone(),
                    });
                };
                let fact = fact.map_err(adoption)?;
                tracing::debug!(fact = %fact.kind(), "adoption fact");
                step = machine.next(fact).map_err(|source| {
                    adoption(AdoptionStop::Misfit {
                        command: command.kind(),
                        source,
                    })
                })?;
            }
            Step::Done(outcome) => {
                let session = match &outcome {
                    Outcome::Ready {
                        session: Some(SessionId(sid)),
                        ..
                    } => Some(opened.remove(sid).ok_or_else(|| {
                        adoption(AdoptionStop::SessionNotOpened {
                            session: sid.clone(),
                        })
                    })?),
                    _ => None,
                };
                let deleted_leaks = delete_leaked(client, &outcome).await;
                return Ok(Run {
                    outcome,
                    commands,
                    session,
                    deleted_leaks,
                });
            }
        }
    }
}

/// Deletes every session a cancelled run still has open (best effort: one that cannot be
/// deleted expires on GitHub).
async fn close_opened(client: &Client, opened: &BTreeMap<String, Session>) {
    for session in opened.values() {
        let _ = client
            .delete_session(session.scale_set_id(), &session.session_id)
            .await;
    }
}

/// Deletes the session an outcome reports as not closed, once; a failure leaves it to expire
/// on GitHub (the outcome already says so).
async fn delete_leaked(client: &Client, outcome: &Outcome) -> Vec<String> {
    let (id, SessionId(session)) = match outcome {
        Outcome::Retry {
            reason: RetryReason::SessionNotClosed { id, session },
            ..
        }
        | Outcome::Failed {
            reason:
                Failure::AttemptsExhausted {
                    last: RetryReason::SessionNotClosed { id, session },
                    ..
                },
        } => (*id, session.clone()),
        _ => return Vec::new(),
    };
    let result = client.delete_session(id, &session).await;
    if result.is_ok() {
        vec![session]
    } else {
        Vec::new()
    }
}

/// Executes one command and translates its answer into the fact the command documents.
async fn execute<H: Hooks>(
    client: &Client,
    command: &Command,
    opened: &mut BTreeMap<String, Session>,
    hooks: &H,
) -> Result<Fact, AdoptionStop> {
    let failure = |error| failure(command.kind(), error);
    Ok(match command {
        Command::GetById { id } => {
            let result = client.get_scale_set(*id).await;
            match result {
                Ok(set) => Fact::ScaleSet(observed(&set)?),
                Err(e) if e.is_scale_set_not_found() => Fact::NotFound,
                Err(e) => failure(e)?,
            }
        }
        Command::ListByName { group, name } => {
            let result = client
                .query_scale_sets_by_name(github_group(*group)?, name)
                .await;
            match result {
                Ok((_, list)) => Fact::ScaleSets(observed_all(&list.value)?),
                Err(e) => failure(e)?,
            }
        }
        Command::ListGroup { group } => {
            let result = client.list_scale_sets(Some(github_group(*group)?)).await;
            match result {
                Ok(sets) => Fact::ScaleSets(observed_all(&sets)?),
                Err(e) => failure(e)?,
            }
        }
        Command::Create(spec) => {
            let result = client.create_scale_set(&new_scale_set(spec)?).await;
            match result {
                Ok(set) => {
                    hooks.created(spec).await;
                    Fact::ScaleSet(observed(&set)?)
                }
                Err(e) if e.is_scale_set_exists() => Fact::Exists,
                Err(e) => failure(e)?,
            }
        }
        Command::OpenSession { id, owner } => {
            let result = client.create_session(*id, owner).await;
            match result {
                Ok(session) => {
                    let sid = session.session_id.clone();
                    opened.insert(sid.clone(), session);
                    Fact::Opened(SessionId(sid))
                }
                Err(e) if e.is_session_conflict() => Fact::Conflict {
                    owner: e.session_conflict_owner(),
                },
                Err(e) if e.is_scale_set_not_found() => Fact::NotFound,
                Err(e) => failure(e)?,
            }
        }
        Command::CloseSession { id, session } => {
            let result = client.delete_session(*id, &session.0).await;
            match result {
                Ok(()) => {
                    opened.remove(&session.0);
                    Fact::Closed
                }
                // Only GitHub naming the session is proof for the machine: a bare 404 (a
                // router's, or a `text/plain` body) or a 403 that merely says "is not valid"
                // stays a `BadRequest`, so the close is tried again and reported, never
                // silently leaked.
                Err(e)
                    if e.session_gone(&session.0)
                        .is_some_and(SessionGone::names_the_session) =>
                {
                    opened.remove(&session.0);
                    Fact::SessionGone
                }
                Err(e) if e.is_scale_set_not_found() => {
                    opened.remove(&session.0);
                    Fact::NotFound
                }
                Err(e) => failure(e)?,
            }
        }
        Command::Update { id, patch } => {
            let result = client.update_scale_set(*id, &github_patch(patch)?).await;
            match result {
                Ok(_) => Fact::Updated,
                Err(e) if e.is_scale_set_not_found() => Fact::NotFound,
                Err(e) => failure(e)?,
            }
        }
        other => {
            return Err(AdoptionStop::UnknownCommand {
                command: other.kind(),
            });
        }
    })
}

/// Rule 6's translation of any other client error: retryable → `Transient`, any other HTTP
/// 4xx → `BadRequest` with the exception's short name. Errors without a GitHub answer behind
/// them (undecodable 2xx bodies, invalid requests) have no fact: the run stops with an error,
/// never an adoption.
fn failure(command: CommandKind, error: GitHubError) -> Result<Fact, AdoptionStop> {
    if error.class() == ErrorClass::Retryable {
        return Ok(Fact::Transient {
            message: chain(&error),
        });
    }
    match error.status() {
        Some(status) if (400..500).contains(&status) => Ok(Fact::BadRequest {
            exception: error.exception_name().unwrap_or_default().to_owned(),
            message: error
                .service_error()
                .map_or_else(|| chain(&error), |s| s.message.clone()),
        }),
        _ => Err(AdoptionStop::NoFact {
            command,
            source: error,
        }),
    }
}

/// The machine's view of a scale set; a missing `runnerGroupId` stays `None`.
fn observed(set: &RunnerScaleSet) -> Result<AdoptScaleSet, AdoptionStop> {
    let runner_group_id = set
        .runner_group_id
        .map(|group| {
            u64::try_from(group)
                .map(RunnerGroupId)
                .map_err(|_| AdoptionStop::InvalidGitHubId {
                    what: "runner group",
                    id: group.into(),
                })
        })
        .transpose()?;
    Ok(AdoptScaleSet {
        id: set.id,
        name: set.name.clone(),
        runner_group_id,
        labels: set.labels.iter().map(|label| label.name.clone()).collect(),
        disable_update: set.runner_setting.disable_update,
    })
}

/// Every scale set of a GitHub listing as the adoption machine observes it.
pub fn observed_all(sets: &[RunnerScaleSet]) -> Result<Vec<AdoptScaleSet>, AdoptionStop> {
    sets.iter().map(observed).collect()
}

fn github_group(group: RunnerGroupId) -> Result<GitHubRunnerGroupId, AdoptionStop> {
    GitHubRunnerGroupId::try_from(group.0).map_err(|_| AdoptionStop::IdOutOfRange {
        what: "runner group",
        id: group.0,
    })
}

fn setting(disable_update: bool) -> RunnerSetting {
    RunnerSetting {
        disable_update,
        ..RunnerSetting::default()
    }
}

/// The create body: exactly the spec's labels (the name, the configured labels, the owner
/// label), each `System`, and `disableUpdate`.
fn new_scale_set(spec: &CreateSpec) -> Result<NewRunnerScaleSet, AdoptionStop> {
    Ok(
        NewRunnerScaleSet::new(spec.name.to_string(), github_group(spec.runner_group_id)?)
            .with_labels(spec.labels.iter().map(Label::system).collect())
            .with_runner_setting(setting(spec.disable_update)),
    )
}

fn github_patch(patch: &Patch) -> Result<RunnerScaleSetPatch, AdoptionStop> {
    Ok(RunnerScaleSetPatch {
        labels: Some(patch.labels.iter().map(Label::system).collect()),
        runner_setting: Some(setting(patch.disable_update)),
        runner_group_id: Some(github_group(patch.runner_group_id)?),
        ..RunnerScaleSetPatch::default()
    })
}
