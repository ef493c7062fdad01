//! A test-only driver for the adoption machine: it runs one `scaleset_adopt::Machine` to its
//! outcome against a real GitHub (here: the simulator) through the real `scaleset-github`
//! client, translating each [`Command`] into one client call and each answer into a [`Fact`].
//!
//! Like the driver `scaleset-control` will have, it makes no decisions: every `if` here is a
//! translation (which client error is which fact), never a policy. It keeps the full
//! [`Session`] of every session it opened, so a session the outcome hands over (policy `any`)
//! comes back with its queue token.
//!
//! A session the outcome neither hands over nor reports closed (a `SessionNotClosed` retry)
//! is deleted by the driver once more, best effort, so a leaked session opened under our
//! session owner can never later read as our own stale session.
//!
//! It deliberately does not persist anything, log, or wait: [`ensure`] runs attempt after
//! attempt for tests that need the retry loop, back to back. The backoff hint stays in each
//! run's outcome; the simulator's state, not time, is what changes between attempts here.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use scaleset_adopt::{
    Command, CreateSpec, Fact, Failure, Input, Machine, Outcome, Patch, RetryReason, RunnerGroupId,
    ScaleSet, ScaleSetId, SessionId, Step,
};
use scaleset_github::{
    Client, Error, ErrorClass, ExceptionKind, Label, NewRunnerScaleSet, RunnerScaleSet,
    RunnerScaleSetPatch, RunnerSetting, Session,
};

/// What one run of the machine did and how it ended.
#[derive(Debug)]
pub struct Run {
    /// The machine's outcome.
    pub outcome: Outcome,
    /// Every command the machine issued, in order.
    pub commands: Vec<Command>,
    /// The full session behind `Outcome::Ready { session: Some(..) }`, when one was handed over.
    pub session: Option<Session>,
    /// Sessions the machine reported not closed that the driver deleted afterwards.
    pub deleted_leaks: Vec<String>,
}

impl Run {
    /// The notices of a `Ready` outcome (empty for any other).
    pub fn outcome_notices(&self) -> &[scaleset_adopt::Notice] {
        match &self.outcome {
            Outcome::Ready { notices, .. } => notices,
            _ => &[],
        }
    }

    /// How many commands of this kind the run issued.
    pub fn count(&self, kind: scaleset_adopt::CommandKind) -> usize {
        self.commands.iter().filter(|c| c.kind() == kind).count()
    }
}

/// Runs one attempt: a fresh [`Machine`] for `input`, driven until it is done.
///
/// # Errors
///
/// A client failure that is not an answer from GitHub (invalid configuration, a request that
/// cannot be encoded, a 2xx body that cannot be decoded, an id out of range): the machine has no
/// fact for those, so the run stops with an error naming the command. Also any misuse the
/// machine reports (a fact that does not fit), which would be a bug in this driver.
pub async fn run_once(client: &Client, input: Input) -> Result<Run> {
    let mut machine = Machine::new(input);
    let mut step = machine.start();
    let mut commands = Vec::new();
    let mut opened: BTreeMap<String, Session> = BTreeMap::new();
    loop {
        match step {
            Step::Do(command) => {
                commands.push(command.clone());
                let fact = execute(client, &command, &mut opened)
                    .await
                    .with_context(|| format!("executing {}", command.kind()))?;
                step = machine
                    .next(fact)
                    .with_context(|| format!("feeding the answer to {}", command.kind()))?;
            }
            Step::Done(outcome) => {
                let session =
                    match &outcome {
                        Outcome::Ready {
                            session: Some(SessionId(id)),
                            ..
                        } => Some(opened.remove(id).with_context(|| {
                            format!("handed-over session {id} was never opened")
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

/// Runs attempts until one does not end in [`Outcome::Retry`], bumping `attempt` as the
/// machine's contract says (without waiting the hint). Returns every run, the last one deciding.
pub async fn ensure(client: &Client, mut input: Input) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    loop {
        let run = run_once(client, input.clone()).await?;
        let retry = matches!(run.outcome, Outcome::Retry { .. });
        runs.push(run);
        if !retry {
            return Ok(runs);
        }
        if runs.len() > usize::try_from(input.retry.max_attempts).unwrap_or(usize::MAX) {
            bail!("the machine kept retrying beyond max_attempts");
        }
        input.retry.attempt += 1;
    }
}

/// Deletes the session an outcome reports as not closed, once; a failure leaves it to expire
/// on GitHub (the outcome already says so).
async fn delete_leaked(client: &Client, outcome: &Outcome) -> Vec<String> {
    let leaked = match outcome {
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
    let (id, SessionId(session)) = leaked;
    match github_id(id) {
        Ok(id) if client.delete_session(id, &session).await.is_ok() => vec![session],
        _ => Vec::new(),
    }
}

/// Executes one command and translates its answer into the fact the command documents.
async fn execute(
    client: &Client,
    command: &Command,
    opened: &mut BTreeMap<String, Session>,
) -> Result<Fact> {
    Ok(match command {
        Command::GetById { id } => match client.get_scale_set(github_id(*id)?).await {
            Ok(set) => Fact::ScaleSet(observed(&set)?),
            Err(e) if e.is_scale_set_not_found() => Fact::NotFound,
            Err(e) => failure(e)?,
        },
        Command::ListByName { group, name } => {
            match client
                .query_scale_sets_by_name(github_group(*group)?, name)
                .await
            {
                Ok((_, list)) => Fact::ScaleSets(observed_all(&list.value)?),
                Err(e) => failure(e)?,
            }
        }
        Command::ListGroup { group } => {
            match client.list_scale_sets(Some(github_group(*group)?)).await {
                Ok(sets) => Fact::ScaleSets(observed_all(&sets)?),
                Err(e) => failure(e)?,
            }
        }
        Command::Create(spec) => match client.create_scale_set(&new_scale_set(spec)?).await {
            Ok(set) => Fact::ScaleSet(observed(&set)?),
            Err(e) if e.is_scale_set_exists() => Fact::Exists,
            Err(e) => failure(e)?,
        },
        Command::OpenSession { id, owner } => {
            match client.create_session(github_id(*id)?, owner).await {
                Ok(session) => {
                    let id = session.session_id.clone();
                    opened.insert(id.clone(), session);
                    Fact::Opened(SessionId(id))
                }
                Err(e) if e.is_session_conflict() => Fact::Conflict {
                    owner: e.session_conflict_owner(),
                },
                Err(e) if e.is_scale_set_not_found() => Fact::NotFound,
                Err(e) => failure(e)?,
            }
        }
        Command::CloseSession { id, session } => {
            match client.delete_session(github_id(*id)?, &session.0).await {
                Ok(()) => {
                    opened.remove(&session.0);
                    Fact::Closed
                }
                Err(e) if is_session_gone(&e, &session.0) => {
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
            match client
                .update_scale_set(github_id(*id)?, &github_patch(patch)?)
                .await
            {
                Ok(_) => Fact::Updated,
                Err(e) if e.is_scale_set_not_found() => Fact::NotFound,
                Err(e) => failure(e)?,
            }
        }
        other => bail!("this driver does not know the command {:?}", other.kind()),
    })
}

/// Closing `session`: GitHub says it expired (`RunnerScaleSetSessionExpiredException`, outer
/// or nested), or a 400/404 message names that very session id. A bare 404 or a 403 that merely
/// says "is not valid" is not proof: it stays a `BadRequest`, so the close is tried again and
/// reported, never silently leaked.
fn is_session_gone(error: &Error, session: &str) -> bool {
    let Some(service) = error.service_error() else {
        return false;
    };
    service.has_exception(&ExceptionKind::RunnerScaleSetSessionExpired)
        || (matches!(service.status, 400 | 404)
            && !session.is_empty()
            && service.message.contains(session))
}

/// Rule 6's translation of any other client error: retryable → `Transient`, any other HTTP
/// 4xx → `BadRequest` with the exception's short name. Errors without a GitHub answer behind
/// them have no fact: they end the run with an error.
fn failure(error: Error) -> Result<Fact> {
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
        _ => Err(anyhow::Error::new(error).context("a client error with no adoption fact")),
    }
}

fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The machine's view of a scale set; a missing `runnerGroupId` stays `None`.
fn observed(set: &RunnerScaleSet) -> Result<ScaleSet> {
    let id = u64::try_from(set.id)
        .with_context(|| format!("github returned scale set id {} (negative)", set.id))?;
    let runner_group_id = set
        .runner_group_id
        .map(|group| {
            u64::try_from(group)
                .map(RunnerGroupId)
                .with_context(|| format!("github returned runner group id {group} (negative)"))
        })
        .transpose()?;
    Ok(ScaleSet {
        id: ScaleSetId(id),
        name: set.name.clone(),
        runner_group_id,
        labels: set.labels.iter().map(|label| label.name.clone()).collect(),
        disable_update: set.runner_setting.disable_update,
    })
}

fn observed_all(sets: &[RunnerScaleSet]) -> Result<Vec<ScaleSet>> {
    sets.iter().map(observed).collect()
}

fn github_id(id: ScaleSetId) -> Result<i64> {
    i64::try_from(id.0).with_context(|| format!("scale set id {id} does not fit github's i64"))
}

fn github_group(group: RunnerGroupId) -> Result<i64> {
    i64::try_from(group.0)
        .with_context(|| format!("runner group id {group} does not fit github's i64"))
}

fn setting(disable_update: bool) -> RunnerSetting {
    RunnerSetting {
        disable_update,
        ..RunnerSetting::default()
    }
}

/// The create body: exactly the spec's labels (the name, the configured labels, the owner
/// label), each `System`, and `disableUpdate`.
fn new_scale_set(spec: &CreateSpec) -> Result<NewRunnerScaleSet> {
    Ok(
        NewRunnerScaleSet::new(spec.name.clone(), github_group(spec.runner_group_id)?)
            .with_labels(spec.labels.iter().map(Label::system).collect())
            .with_runner_setting(setting(spec.disable_update)),
    )
}

fn github_patch(patch: &Patch) -> Result<RunnerScaleSetPatch> {
    Ok(RunnerScaleSetPatch {
        labels: Some(patch.labels.iter().map(Label::system).collect()),
        runner_setting: Some(setting(patch.disable_update)),
        runner_group_id: Some(github_group(patch.runner_group_id)?),
        ..RunnerScaleSetPatch::default()
    })
}
