//! The ensure driver: resolves the runner group (cached in the store), validates the identity,
//! then drives `scaleset-adopt`'s machine with the real client. It records the intent in the
//! store before the create POST and the outcome after (GitHub id, provenance, evidence, state,
//! reason, an event), so a crash in between converges on the next run (whose lookup finds the
//! created scale set by its owner label) without a duplicate.
//!
//! The translation of commands to calls and answers to facts is the one the e2e adoption
//! driver (`tests/src/adoption_driver.rs`) proved against the simulator; every `if` here is a
//! translation, never a policy.

use std::collections::BTreeMap;
use std::time::Duration;

use scaleset_adopt::{
    Command, CreateSpec, Desired, Fact, Input, Machine, Outcome, Patch, Policy, Refusal,
    RunnerGroupId, ScaleSet as AdoptScaleSet, ScaleSetId as AdoptId, SessionId, Step,
};
use scaleset_github::{
    Client, Error as GitHubError, ErrorClass, ExceptionKind, Label, NewRunnerScaleSet,
    RunnerScaleSet, RunnerScaleSetPatch, RunnerSetting, Session,
};
use scaleset_store::{
    AdoptionPolicy, Lease, Provenance, ScaleSet, ScaleSetId, ScaleSetState, Store,
};

use crate::checkpoint::Checkpoint;
use crate::error::{Error, chain, store};
use crate::identity::validate_scale_set_name;
use crate::task::Shared;

/// How an ensure ended.
#[derive(Debug)]
pub(crate) enum Ensured {
    /// The scale set is ours; serve it.
    Ready {
        /// GitHub's id.
        github_id: i64,
        /// A session the machine opened under our owner and handed over (policy `any`).
        session: Option<Box<Session>>,
    },
    /// Not servable now (refused, misconfigured, failed); the state says why. Try again
    /// after this long (a changed spec restarts the task sooner).
    Wait {
        /// How long to wait.
        after: Duration,
    },
}

/// Ensures one scale set.
pub(crate) async fn ensure(
    shared: &Shared,
    client: &Client,
    lease: &Lease,
    id: ScaleSetId,
) -> Result<Ensured, Error> {
    let scale_set = shared
        .store
        .get_scale_set(id)
        .await
        .map_err(store("reading the scale set to ensure"))?;
    let name = scale_set.spec.name.clone();
    if let Err(error) = validate_scale_set_name(&name) {
        record(shared, id, "config_error", &chain(&error), |s| {
            s.state = ScaleSetState::Error
        })
        .await?;
        return Ok(Ensured::Wait {
            after: shared.settings.refused_recheck,
        });
    }
    let Some(group) = resolve_group(shared, client, &scale_set).await? else {
        let error = Error::UnknownRunnerGroup {
            scale_set: name.clone(),
            group: scale_set.spec.runner_group.name.clone(),
        };
        record(shared, id, "config_error", &error.to_string(), |s| {
            s.state = ScaleSetState::Error;
        })
        .await?;
        return Ok(Ensured::Wait {
            after: shared.settings.refused_recheck,
        });
    };
    let known_id = scale_set
        .github_id
        .and_then(|id| u64::try_from(id).ok())
        .map(AdoptId);
    let mut input = Input {
        desired: Desired {
            name: name.clone(),
            runner_group_id: RunnerGroupId(group),
            labels: scale_set.spec.labels.clone(),
            disable_update: scale_set.spec.disable_update,
        },
        known_id,
        policy: match scale_set.spec.adoption_policy {
            AdoptionPolicy::Never => Policy::Never,
            AdoptionPolicy::Any => Policy::Any,
            _ => Policy::Owned,
        },
        repair: scale_set.spec.repair,
        // The ownership probe stays off under `owned` (docs/adoption.md: GitHub's 409 names no
        // owner, so a probe only opens a session on a set not proven ours); `any` probes anyway.
        probe: false,
        identity: shared.identity.adoption(),
        retry: shared.settings.adoption_retry,
    };
    input.retry.attempt = 0;
    loop {
        let run = run_once(shared, client, id, &name, input.clone()).await?;
        match run.outcome {
            Outcome::Ready {
                id: github,
                provenance,
                evidence,
                reset_cursor,
                notices,
                ..
            } => {
                let github_id = i64::try_from(github.0).map_err(|_| Error::Adoption {
                    scale_set: name.clone(),
                    reason: format!("github scale set id {github} does not fit an i64"),
                })?;
                let provenance = match provenance {
                    scaleset_adopt::Provenance::Created => Provenance::Created,
                    scaleset_adopt::Provenance::Known => Provenance::Known,
                    _ => Provenance::Adopted,
                };
                let reason = format!(
                    "ready: scale set {github_id} {} on evidence {evidence:?}{}",
                    provenance.as_str(),
                    if reset_cursor {
                        " (GitHub had deleted the stored one: cursor reset)"
                    } else {
                        ""
                    }
                );
                let evidence_json = serde_json::to_value(&evidence).unwrap_or_default();
                record(shared, id, "ready", &reason, |s| {
                    s.github_id = Some(github_id);
                    s.provenance = Some(provenance);
                    s.evidence = evidence_json.clone();
                    s.state = ScaleSetState::Ready;
                })
                .await?;
                if reset_cursor {
                    shared
                        .store
                        .set_message_cursor(lease, 0)
                        .await
                        .map_err(store("resetting the message cursor"))?;
                }
                for notice in &notices {
                    // Operators see these in the scale set's events: a warning (say, a GHES that
                    // dropped our owner label) is worth acting on, the rest is a record.
                    let kind = if notice.is_warning() {
                        tracing::warn!(github_id, %notice, "scale set ensured with a warning");
                        "warning"
                    } else {
                        tracing::info!(github_id, %notice, "scale set spec applied");
                        "notice"
                    };
                    shared
                        .store
                        .append_event(id, kind, &notice.to_string())
                        .await
                        .map_err(store("appending an adoption notice"))?;
                }
                tracing::info!(github_id, %reason, "scale set ensured");
                return Ok(Ensured::Ready {
                    github_id,
                    session: run.session.map(Box::new),
                });
            }
            Outcome::Refused { reason } => {
                let (state, after) = match &reason {
                    Refusal::ForeignSession { .. } => (
                        ScaleSetState::ForeignSession,
                        shared.settings.foreign_session_recheck,
                    ),
                    Refusal::Drifted { .. } | Refusal::RepairDidNotTake { .. } => {
                        (ScaleSetState::Drifted, shared.settings.refused_recheck)
                    }
                    _ => (ScaleSetState::Refused, shared.settings.refused_recheck),
                };
                let text = format!(
                    "{} ({reason}); what to do: {}",
                    reason.code(),
                    reason.remediation()
                );
                tracing::warn!(reason = %text, "scale set refused");
                record(shared, id, "refused", &text, |s| s.state = state).await?;
                return Ok(Ensured::Wait { after });
            }
            Outcome::Failed { reason } => {
                if let scaleset_adopt::Failure::AttemptsExhausted {
                    last: scaleset_adopt::RetryReason::SessionNotClosed { id: set, session },
                    ..
                } = &reason
                    && let Ok(set) = i64::try_from(set.0)
                {
                    // The last attempt left a session open under our owner: delete it once
                    // more, so it can never later read as our own stale session.
                    let result = client.delete_session(set, &session.0).await;
                    shared.metrics.github("delete_session", &result);
                }
                let text = format!("adoption failed: {reason}");
                tracing::warn!(reason = %text, "scale set ensure failed");
                record(shared, id, "failed", &text, |s| {
                    s.state = ScaleSetState::Error;
                })
                .await?;
                return Ok(Ensured::Wait {
                    after: shared.settings.refused_recheck,
                });
            }
            Outcome::Retry { after, reason } => {
                if let scaleset_adopt::RetryReason::SessionNotClosed { id: set, session } = &reason
                    && let Ok(set) = i64::try_from(set.0)
                {
                    let result = client.delete_session(set, &session.0).await;
                    shared.metrics.github("delete_session", &result);
                }
                let text = format!("ensure retrying: {reason}");
                tracing::info!(reason = %text, ?after, "ensure will retry");
                record(shared, id, "retry", &text, |s| {
                    if s.state != ScaleSetState::Ready {
                        s.state = ScaleSetState::Pending;
                    }
                })
                .await?;
                tokio::time::sleep(after).await;
                input.retry.attempt += 1;
            }
            other => {
                return Err(Error::Adoption {
                    scale_set: name,
                    reason: format!(
                        "the machine ended in an outcome this driver does not know: {other:?}"
                    ),
                });
            }
        }
    }
}

/// The runner group's id: the cached one, or a lookup by name that is then cached in the
/// store. `None` when GitHub has no group of that name.
async fn resolve_group(
    shared: &Shared,
    client: &Client,
    scale_set: &ScaleSet,
) -> Result<Option<u64>, Error> {
    if let Some(id) = scale_set.spec.runner_group.id
        && let Ok(id) = u64::try_from(id)
    {
        return Ok(Some(id));
    }
    let name = &scale_set.spec.runner_group.name;
    let result = client.get_runner_group_by_name(name).await;
    shared.metrics.github("get_runner_group_by_name", &result);
    let group = result.map_err(|source| Error::GitHub {
        scale_set: scale_set.spec.name.clone(),
        during: "resolving the runner group",
        source,
    })?;
    let Some(group) = group else {
        return Ok(None);
    };
    let Ok(id) = u64::try_from(group.id) else {
        return Ok(None);
    };
    let gid = group.id;
    // Cached in the store so later runs (and restarts) skip the lookup.
    record(
        shared,
        scale_set.id,
        "runner_group_resolved",
        &format!("runner group {name:?} is id {gid}"),
        |s| {
            s.spec.runner_group.id = Some(gid);
        },
    )
    .await?;
    Ok(Some(id))
}

/// Re-reads the scale set, applies `change`, writes it (retrying a stale generation), then
/// appends an event.
pub(crate) async fn record(
    shared: &Shared,
    id: ScaleSetId,
    kind: &str,
    reason: &str,
    change: impl Fn(&mut ScaleSet),
) -> Result<(), Error> {
    let store: &dyn Store = shared.store.as_ref();
    let mut tries = 0;
    loop {
        tries += 1;
        let mut scale_set = store
            .get_scale_set(id)
            .await
            .map_err(store_err("reading the scale set to record its state"))?;
        change(&mut scale_set);
        scale_set.state_reason = reason.to_owned();
        match store.update_scale_set(&scale_set).await {
            Ok(_) => break,
            Err(e) if e.is_stale() && tries < 5 => {}
            Err(e) => return Err(store_err("recording the scale set's state")(e)),
        }
    }
    store
        .append_event(id, kind, reason)
        .await
        .map_err(store_err("appending an event"))?;
    Ok(())
}

fn store_err(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    store(during)
}

/// What one machine run did.
struct Run {
    outcome: Outcome,
    session: Option<Session>,
}

/// Runs one attempt: a fresh machine for `input`, driven until it is done.
async fn run_once(
    shared: &Shared,
    client: &Client,
    id: ScaleSetId,
    name: &str,
    input: Input,
) -> Result<Run, Error> {
    let mut machine = Machine::new(input);
    let mut step = machine.start();
    let mut opened: BTreeMap<String, Session> = BTreeMap::new();
    let adoption = |reason: String| Error::Adoption {
        scale_set: name.to_owned(),
        reason,
    };
    loop {
        match step {
            Step::Do(command) => {
                tracing::debug!(command = %command.kind(), "adoption command");
                if let Command::Create(spec) = &command {
                    record(
                        shared,
                        id,
                        "create_intent",
                        &format!(
                            "creating scale set {:?} in runner group {} on GitHub",
                            spec.name, spec.runner_group_id
                        ),
                        |s| {
                            if s.state != ScaleSetState::Ready {
                                s.state = ScaleSetState::Pending;
                            }
                        },
                    )
                    .await?;
                    shared
                        .checkpoints
                        .reached(Checkpoint::ScaleSetCreateIntent, name)
                        .await;
                }
                let fact = execute(shared, client, &command, &mut opened)
                    .await
                    .map_err(|e| adoption(format!("executing {}: {e}", command.kind())))?;
                tracing::debug!(fact = %fact.kind(), "adoption fact");
                step = machine.next(fact).map_err(|e| {
                    adoption(format!("feeding the answer to {}: {e}", command.kind()))
                })?;
            }
            Step::Done(outcome) => {
                let session = match &outcome {
                    Outcome::Ready {
                        session: Some(SessionId(sid)),
                        ..
                    } => Some(opened.remove(sid).ok_or_else(|| {
                        adoption(format!("handed-over session {sid} was never opened"))
                    })?),
                    _ => None,
                };
                return Ok(Run { outcome, session });
            }
        }
    }
}

/// Executes one command and translates its answer into the fact the command documents.
async fn execute(
    shared: &Shared,
    client: &Client,
    command: &Command,
    opened: &mut BTreeMap<String, Session>,
) -> Result<Fact, String> {
    let metrics = &shared.metrics;
    Ok(match command {
        Command::GetById { id } => {
            let result = client.get_scale_set(github_id(*id)?).await;
            metrics.github("get_scale_set", &result);
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
            metrics.github("get_scale_set_by_name", &result);
            match result {
                Ok((_, list)) => Fact::ScaleSets(observed_all(&list.value)?),
                Err(e) => failure(e)?,
            }
        }
        Command::ListGroup { group } => {
            let result = client.list_scale_sets(Some(github_group(*group)?)).await;
            metrics.github("list_scale_sets", &result);
            match result {
                Ok(sets) => Fact::ScaleSets(observed_all(&sets)?),
                Err(e) => failure(e)?,
            }
        }
        Command::Create(spec) => {
            let result = client.create_scale_set(&new_scale_set(spec)?).await;
            metrics.github("create_scale_set", &result);
            match result {
                Ok(set) => {
                    shared
                        .checkpoints
                        .reached(Checkpoint::ScaleSetCreated, &spec.name)
                        .await;
                    Fact::ScaleSet(observed(&set)?)
                }
                Err(e) if e.is_scale_set_exists() => Fact::Exists,
                Err(e) => failure(e)?,
            }
        }
        Command::OpenSession { id, owner } => {
            let result = client.create_session(github_id(*id)?, owner).await;
            metrics.github("create_session", &result);
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
            let result = client.delete_session(github_id(*id)?, &session.0).await;
            metrics.github("delete_session", &result);
            match result {
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
            let result = client
                .update_scale_set(github_id(*id)?, &github_patch(patch)?)
                .await;
            metrics.github("update_scale_set", &result);
            match result {
                Ok(_) => Fact::Updated,
                Err(e) if e.is_scale_set_not_found() => Fact::NotFound,
                Err(e) => failure(e)?,
            }
        }
        other => {
            return Err(format!(
                "this driver does not know the command {:?}",
                other.kind()
            ));
        }
    })
}

/// Closing `session`: GitHub says it expired (`RunnerScaleSetSessionExpiredException`, outer
/// or nested), or a 400/404 message names that very session id. A bare 404 (a router's, or a
/// `text/plain` body) or a 403 that merely says "is not valid" is not proof: it stays a
/// `BadRequest`, so the close is tried again and reported, never silently leaked.
fn is_session_gone(error: &GitHubError, session: &str) -> bool {
    let Some(service) = error.service_error() else {
        return false;
    };
    service.has_exception(&ExceptionKind::RunnerScaleSetSessionExpired)
        || (matches!(service.status, 400 | 404)
            && !session.is_empty()
            && service.message.contains(session))
}

/// Rule 6's translation of any other client error: retryable → `Transient`, any other HTTP
/// 4xx → `BadRequest`. Errors without a GitHub answer behind them (undecodable 2xx bodies,
/// invalid requests) have no fact: the run stops with an error, never an adoption.
fn failure(error: GitHubError) -> Result<Fact, String> {
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
        _ => Err(format!(
            "a client error with no adoption fact: {}",
            chain(&error)
        )),
    }
}

/// The machine's view of a scale set; a missing `runnerGroupId` stays `None`.
fn observed(set: &RunnerScaleSet) -> Result<AdoptScaleSet, String> {
    let id = u64::try_from(set.id)
        .map_err(|_| format!("github returned scale set id {} (negative)", set.id))?;
    let runner_group_id = set
        .runner_group_id
        .map(|group| {
            u64::try_from(group)
                .map(RunnerGroupId)
                .map_err(|_| format!("github returned runner group id {group} (negative)"))
        })
        .transpose()?;
    Ok(AdoptScaleSet {
        id: AdoptId(id),
        name: set.name.clone(),
        runner_group_id,
        labels: set.labels.iter().map(|label| label.name.clone()).collect(),
        disable_update: set.runner_setting.disable_update,
    })
}

fn observed_all(sets: &[RunnerScaleSet]) -> Result<Vec<AdoptScaleSet>, String> {
    sets.iter().map(observed).collect()
}

fn github_id(id: AdoptId) -> Result<i64, String> {
    i64::try_from(id.0).map_err(|_| format!("scale set id {id} does not fit github's i64"))
}

fn github_group(group: RunnerGroupId) -> Result<i64, String> {
    i64::try_from(group.0).map_err(|_| format!("runner group id {group} does not fit github's i64"))
}

fn setting(disable_update: bool) -> RunnerSetting {
    RunnerSetting {
        disable_update,
        ..RunnerSetting::default()
    }
}

/// The create body: exactly the spec's labels (the name, the configured labels, the owner
/// label), each `System`, and `disableUpdate`.
fn new_scale_set(spec: &CreateSpec) -> Result<NewRunnerScaleSet, String> {
    Ok(
        NewRunnerScaleSet::new(spec.name.clone(), github_group(spec.runner_group_id)?)
            .with_labels(spec.labels.iter().map(Label::system).collect())
            .with_runner_setting(setting(spec.disable_update)),
    )
}

fn github_patch(patch: &Patch) -> Result<RunnerScaleSetPatch, String> {
    Ok(RunnerScaleSetPatch {
        labels: Some(patch.labels.iter().map(Label::system).collect()),
        runner_setting: Some(setting(patch.disable_update)),
        runner_group_id: Some(github_group(patch.runner_group_id)?),
        ..RunnerScaleSetPatch::default()
    })
}
