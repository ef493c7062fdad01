//! The ensure driver: resolves the runner group (cached in the store), validates the identity,
//! then drives `scaleset-adopt`'s machine with the real client. It records the intent in the
//! store before the create POST and the outcome after (GitHub id, provenance, evidence, state,
//! reason, an event), so a crash in between converges on the next run (whose lookup finds the
//! created scale set by its owner label) without a duplicate.
//!
//! Commands become calls and answers become facts in the one shared driver,
//! [`crate::adoption`] (the e2e adoption tests run the same code against the simulator);
//! this module adds what only the controller does around it, through its hooks: the store
//! records, the crash checkpoints and the metrics. A session an attempt reports not closed is
//! deleted once more by that driver.

use std::time::Duration;

use async_trait::async_trait;
use scaleset_adopt::{
    CreateSpec, Desired, Input, Outcome, Refusal, RunnerGroupId, evidence_sentence,
};
use scaleset_github::{Client, GithubScaleSetId, Session};
use scaleset_store::{
    Creation, Event, Lease, Provenance, ReasonCode, ScaleSet, ScaleSetId, ScaleSetState, Store,
};
use tokio_util::sync::CancellationToken;

use crate::adoption::{Hooks, run_once};
use crate::checkpoint::Checkpoint;
use crate::error::{AdoptionStop, Error, store};
use crate::shared::Shared;

/// How an ensure ended.
#[derive(Debug)]
pub(crate) enum Ensured {
    /// The scale set is ours; serve it.
    Ready {
        /// GitHub's id.
        github_id: GithubScaleSetId,
        /// A session the machine opened under our owner and handed over (policy `any`).
        session: Option<Box<Session>>,
        /// For a scale set imported from another manager whose writes wait for our session
        /// (nothing was written to it: [`ImportedWrites::Wait`]), that manager's controller
        /// id: until our session opens, it is the first suspect for a session held.
        awaiting: Option<String>,
    },
    /// The adoption machine asked to be run again after `after` (a transient failure): the
    /// task waits, then ensures again with the next attempt number. Nothing is held meanwhile.
    Retry {
        /// The machine's hint (the task jitters it).
        after: Duration,
    },
    /// Not servable now (refused, misconfigured, failed); the state says why. Try again
    /// after this long (a changed spec restarts the task sooner).
    Wait {
        /// How long to wait.
        after: Duration,
        /// The machine's refusal, when that is why (the API shows its code and remedy).
        refusal: Option<Refusal>,
    },
}

/// Whether an ensure may write to a scale set imported from another manager (GARM): only once
/// its message session is ours, since the old manager may still run it (the adoption machine's
/// `await_session`). Other scale sets are written either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImportedWrites {
    /// No session of ours is open on it: nothing is written.
    Wait,
    /// Our session is open on it.
    Allowed,
}

/// Ensures one scale set: one run of the adoption machine as attempt number `attempt` (0 after
/// anything but a retry). It never waits: a retry is [`Ensured::Retry`], and the caller waits
/// (the task, cancel-aware and holding nothing) and calls again with `attempt + 1`.
pub(crate) async fn ensure(
    shared: &Shared,
    client: &Client,
    lease: &Lease,
    id: ScaleSetId,
    attempt: u32,
    cancel: Option<&CancellationToken>,
    writes: ImportedWrites,
) -> Result<Ensured, Error> {
    let scale_set = shared
        .store
        .get_scale_set(id)
        .await
        .map_err(store("reading the scale set to ensure"))?;
    // The name is a `ScaleSetName`: the parser's rule holds for every stored spec.
    let name = scale_set.spec.name().to_string();
    // A lookup in flight (the client retrying it through an outage) is dropped on a stop.
    let resolved = match cancel {
        Some(cancel) => tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Error::Cancelled { scale_set: name }),
            resolved = resolve_group(shared, client, &scale_set) => resolved,
        },
        None => resolve_group(shared, client, &scale_set).await,
    };
    let Some((group, looked_up)) = resolved? else {
        let error = Error::UnknownRunnerGroup {
            scale_set: name.clone(),
            group: scale_set.spec.runner_group().name.clone(),
        };
        record(
            shared,
            lease,
            ReasonCode::UnknownRunnerGroup,
            &error.to_string(),
            |s| {
                s.state = ScaleSetState::Error;
            },
        )
        .await?;
        return Ok(Ensured::Wait {
            after: shared.settings.refused_recheck,
            refusal: None,
        });
    };
    // A group id looked up now is cached with the outcome's record below, not in a commit of
    // its own (one write fewer per scale set after a lost database: docs/benchmarks.md,
    // issue 35: recovery).
    let cache_group = |s: &mut ScaleSet| {
        if let Some(gid) = looked_up {
            s.spec.set_runner_group_id(Some(gid));
        }
    };
    let known_id = scale_set.github_id.map(GithubScaleSetId);
    let mut input = Input {
        desired: Desired {
            name: name.clone(),
            runner_group_id: RunnerGroupId(group),
            labels: scale_set.spec.label_texts(),
            disable_update: scale_set.spec.disable_update(),
        },
        known_id,
        policy: scale_set.spec.adoption_policy().into(),
        repair: scale_set.spec.repair(),
        // The ownership probe stays off under `owned` (docs/adoption.md: GitHub's 409 names no
        // owner, so a probe only opens a session on a set not proven ours); `any` probes anyway.
        probe: false,
        identity: shared.identity.adoption(),
        retry: shared.settings.adoption_retry,
        // An imported set's note is evidence on every ensure, not only at the plan's apply:
        // the worker's ensure adds our owner label to GARM's set after adopting it.
        takeover: scale_set.takeover.clone(),
        await_session: writes == ImportedWrites::Wait,
    };
    input.retry.attempt = attempt;
    let run = run_once(
        client,
        input,
        &EnsureHooks {
            shared,
            lease,
            cancel,
        },
    )
    .await?;
    match run.outcome {
        Outcome::Ready {
            id: github,
            provenance,
            evidence,
            reset_cursor,
            notices,
            rollback,
            ..
        } => {
            let github_id = github;
            let seen = match (provenance, rollback.permit()) {
                // The one place a record of creation is made: from the permit the machine
                // hands out on its create path only.
                (scaleset_adopt::Provenance::Created, Some(permit)) => {
                    Provenance::Created(Creation::from_permit(permit))
                }
                (scaleset_adopt::Provenance::Known, _) => Provenance::Known,
                // Adopted, or (never, by the machine's contract) created without a permit:
                // nothing proves a creation, so nothing may delete it on GitHub.
                _ => Provenance::Adopted,
            };
            // Provenance is history: what this run saw (`known`, by the stored id) does not
            // replace how the scale set came to be ours. The store keeps the same rule; here it
            // only words the reason.
            let github = i64::from(github_id);
            let recorded = Provenance::recorded(
                scale_set.provenance.as_ref(),
                scale_set.github_id,
                Some(seen.clone()),
                Some(github),
            )
            .unwrap_or_else(|| seen.clone());
            let how = match (&recorded, &seen) {
                (Provenance::Created(_), Provenance::Created(_)) => HowReady::Created,
                (Provenance::Created(_), _) => HowReady::CreatedEarlier,
                (Provenance::Adopted, Provenance::Known) => HowReady::AdoptedEarlier,
                (Provenance::Adopted, _) => HowReady::Adopted,
                (Provenance::Known, _) => HowReady::Known,
            };
            let code = how.code();
            let reason = ready_reason(github_id, how, &evidence, reset_cursor);
            record(shared, lease, code, &reason, |s| {
                cache_group(s);
                s.github_id = Some(github);
                s.provenance = Some(recorded.clone());
                s.evidence.clone_from(&evidence);
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
                // dropped our owner label) is worth acting on, the rest is a record. Logged
                // when it first appears, not at every ensure that finds it again.
                let event = shared
                    .store
                    .append_event(id, notice_code(notice), &notice.to_string())
                    .await
                    .map_err(store("appending an adoption notice"))?;
                match (event.is_first(), notice.is_warning()) {
                    (true, true) => {
                        tracing::warn!(github_id = github_id.0, %notice, "scale set ensured with a warning")
                    }
                    (true, false) => {
                        tracing::info!(github_id = github_id.0, %notice, "scale set spec applied")
                    }
                    (false, _) => {
                        tracing::debug!(github_id = github_id.0, %notice, repeats = event.count, "scale set ensured, as before")
                    }
                }
            }
            tracing::info!(github_id = github_id.0, %reason, "scale set ensured");
            let waits = notices
                .iter()
                .any(|n| matches!(n, scaleset_adopt::Notice::WritesAwaitSession { .. }));
            let awaiting = scale_set
                .takeover
                .as_ref()
                .filter(|_| waits)
                .map(|note| note.controller_id.clone());
            Ok(Ensured::Ready {
                github_id,
                session: run.session.map(Box::new),
                awaiting,
            })
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
            let text = format!("{reason}; what to do: {}", reason.remediation());
            let event = record(shared, lease, ReasonCode::of_refusal(&reason), &text, |s| {
                cache_group(s);
                s.state = state;
                s.refusal = Some(reason.clone());
            })
            .await?;
            if event.is_first() {
                tracing::warn!(reason = %text, "scale set refused");
            } else {
                tracing::debug!(reason = %text, repeats = event.count, "scale set still refused");
            }
            Ok(Ensured::Wait {
                after,
                refusal: Some(reason),
            })
        }
        Outcome::Failed { reason } => {
            let text = format!("adoption failed: {reason}");
            let event = record(shared, lease, ReasonCode::AdoptionFailed, &text, |s| {
                cache_group(s);
                s.state = ScaleSetState::Error;
            })
            .await?;
            if event.is_first() {
                tracing::warn!(reason = %text, "scale set ensure failed");
            } else {
                tracing::debug!(reason = %text, repeats = event.count, "scale set ensure still fails");
            }
            Ok(Ensured::Wait {
                after: shared.settings.refused_recheck,
                refusal: None,
            })
        }
        Outcome::Retry { after, reason } => {
            let text = format!("ensure retrying: {reason}");
            tracing::info!(reason = %text, ?after, "ensure will retry");
            record(shared, lease, ReasonCode::EnsureRetrying, &text, |s| {
                cache_group(s);
                if s.state != ScaleSetState::Ready {
                    s.state = ScaleSetState::Pending;
                }
            })
            .await?;
            Ok(Ensured::Retry { after })
        }
        other => Err(Error::Adoption {
            scale_set: name,
            stop: AdoptionStop::UnknownOutcome {
                outcome: format!("{other:?}"),
            },
        }),
    }
}

/// The runner group's id: the cached one, or a lookup by name, with the id to cache in the
/// store when it was looked up (the caller writes it with the ensure's outcome). `None` when
/// GitHub has no group of that name.
async fn resolve_group(
    shared: &Shared,
    client: &Client,
    scale_set: &ScaleSet,
) -> Result<Option<(u64, Option<i64>)>, Error> {
    if let Some(id) = scale_set.spec.runner_group().id
        && let Ok(id) = u64::try_from(id)
    {
        return Ok(Some((id, None)));
    }
    let name = &scale_set.spec.runner_group().name;
    // Scale sets of one entity share their groups: one lookup serves all of them (after a
    // lost database, 1,000 scale sets in the Default group cost one lookup, not 1,000).
    enum Miss {
        NoGroup,
        Failed(Error),
    }
    let cell = shared.runner_groups.cell(scale_set.entity_id, name);
    let looked_up = cell
        .get_or_try_init(|| async {
            let result = client.get_runner_group_by_name(name).await;
            let group = result.map_err(|source| {
                Miss::Failed(Error::GitHub {
                    scale_set: scale_set.spec.name().to_string(),
                    during: "resolving the runner group",
                    source,
                })
            })?;
            match group {
                Some(group) if u64::try_from(group.id).is_ok() => Ok(i64::from(group.id)),
                _ => Err(Miss::NoGroup),
            }
        })
        .await;
    let gid = match looked_up {
        Ok(gid) => *gid,
        Err(Miss::NoGroup) => return Ok(None),
        Err(Miss::Failed(error)) => return Err(error),
    };
    let Ok(id) = u64::try_from(gid) else {
        return Ok(None);
    };
    // Cached in the store (by the caller) so later runs (and restarts) skip the lookup.
    Ok(Some((id, Some(gid))))
}

/// Re-reads the lease's scale set, applies `change`, writes it with the event in one commit
/// if `lease` is still current (retrying a stale generation:
/// [`scaleset_store::ScaleSetStore::modify_leased_scale_set_with_event`]). Fenced because
/// every caller serves the set under that lease: a worker that lost it (cut off from the
/// database, paused) and records a failure late must not overwrite the state the worker that
/// took the set over recorded; its write fails with `LeaseLost` and writes nothing. A state that `change` leaves as it was (a recheck that finds the same
/// refusal) is not written again, so the generation climbs only when something changed; the
/// store counts a repeated event on its first entry. The returned event says which it was
/// ([`Event::is_first`]): log a change, not each recheck.
pub(crate) async fn record(
    shared: &Shared,
    lease: &Lease,
    code: ReasonCode,
    reason: &str,
    change: impl Fn(&mut ScaleSet) + Sync,
) -> Result<Event, Error> {
    let store: &dyn Store = shared.store.as_ref();
    // One commit for both: a start makes two of these per scale set (docs/benchmarks.md,
    // issue 35: recovery).
    let (_, event) = store
        .modify_leased_scale_set_with_event(
            lease,
            &mut |scale_set| {
                change(scale_set);
                scale_set.state_reason = reason.to_owned();
            },
            code,
            reason,
        )
        .await
        .map_err(store_err("recording the scale set's state and its event"))?;
    Ok(event)
}

fn store_err(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    store(during)
}

/// The controller's side of the shared driver: the create intent recorded in the store before
/// the POST, the crash checkpoints around it, and every GitHub call counted.
struct EnsureHooks<'a> {
    shared: &'a Shared,
    lease: &'a Lease,
    cancel: Option<&'a CancellationToken>,
}

#[async_trait]
impl Hooks for EnsureHooks<'_> {
    async fn before_create(&self, spec: &CreateSpec) -> Result<(), Error> {
        record(
            self.shared,
            self.lease,
            ReasonCode::CreateIntent,
            &create_intent_reason(&spec.name, spec.runner_group_id),
            |s| {
                if s.state != ScaleSetState::Ready {
                    s.state = ScaleSetState::Pending;
                }
            },
        )
        .await?;
        self.shared
            .checkpoints
            .reached(Checkpoint::ScaleSetCreateIntent, spec.name.as_str())
            .await;
        Ok(())
    }

    async fn created(&self, spec: &CreateSpec) {
        self.shared
            .checkpoints
            .reached(Checkpoint::ScaleSetCreated, spec.name.as_str())
            .await;
    }

    fn cancel(&self) -> Option<&CancellationToken> {
        self.cancel
    }
}

/// The reason code of an adoption notice. `Notice` is the adoption crate's (non-exhaustive):
/// a notice this build does not name is coded as the warning or note it says it is.
fn notice_code(notice: &scaleset_adopt::Notice) -> ReasonCode {
    use scaleset_adopt::Notice;
    match notice {
        Notice::SpecApplied { .. } => ReasonCode::SpecApplied,
        Notice::WritesAwaitSession { .. } => ReasonCode::WritesAwaitSession,
        Notice::SpecNotApplied { .. } => ReasonCode::SpecNotApplied,
        Notice::OwnerLabelMissing { .. } => ReasonCode::OwnerLabelMissing,
        other if other.is_warning() => ReasonCode::SpecNotApplied,
        _ => ReasonCode::SpecApplied,
    }
}

/// How a ready scale set came to be ours, as this run saw it against what the store recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HowReady {
    /// Created on GitHub by this run.
    Created,
    /// Created by this controller before, and found again.
    CreatedEarlier,
    /// Adopted before, and found again by its stored id.
    AdoptedEarlier,
    /// Adopted by this run.
    Adopted,
    /// Known to us (by its stored id), with no record of how it came to be ours.
    Known,
}

impl HowReady {
    fn code(self) -> ReasonCode {
        match self {
            Self::Created => ReasonCode::ScaleSetCreated,
            Self::Adopted => ReasonCode::ScaleSetAdopted,
            Self::CreatedEarlier | Self::AdoptedEarlier | Self::Known => {
                ReasonCode::ScaleSetConfirmed
            }
        }
    }
}

/// The state's reason of a ready scale set, a sentence for operators: `GitHub scale set 4 was
/// created by this controller`, `GitHub scale set 1 was adopted, proven ours by our owner
/// label`. The state badge already says `ready`, so the sentence does not; the evidence that
/// only repeats how it came to be ours (`CreatedThisRun` beside "created") is left out.
fn ready_reason(
    github_id: impl std::fmt::Display,
    how: HowReady,
    evidence: &[scaleset_adopt::Evidence],
    reset_cursor: bool,
) -> String {
    let how_words = match how {
        HowReady::Created => "was created by this controller",
        HowReady::CreatedEarlier => "was created by this controller earlier, and is still there",
        HowReady::AdoptedEarlier => "was adopted earlier, and is still there",
        HowReady::Adopted => "was adopted",
        HowReady::Known => "is known to us, and still there",
    };
    let evidence: Vec<scaleset_adopt::Evidence> = evidence
        .iter()
        .filter(|e| **e != scaleset_adopt::Evidence::CreatedThisRun)
        .copied()
        .collect();
    format!(
        "GitHub scale set {github_id} {how_words}{}{}",
        evidence_sentence(&evidence),
        if reset_cursor {
            "; GitHub had deleted the stored one, so its message cursor was reset"
        } else {
            ""
        }
    )
}

/// The reason recorded before a create on GitHub: `creating scale set linux-x64 on GitHub (in
/// runner group 1)`, the name as it is written (no quotes or escapes).
fn create_intent_reason(name: &str, runner_group_id: impl std::fmt::Display) -> String {
    format!("creating scale set {name} on GitHub, in runner group {runner_group_id}")
}

#[cfg(test)]
mod tests {
    use scaleset_adopt::Evidence;

    use super::*;

    #[test]
    fn a_ready_reason_is_a_sentence_without_enum_names_or_doubled_words() {
        assert_eq!(
            ready_reason(4, HowReady::Created, &[Evidence::CreatedThisRun], false),
            "GitHub scale set 4 was created by this controller"
        );
        assert_eq!(
            ready_reason(1, HowReady::Adopted, &[Evidence::OwnerLabel], false),
            "GitHub scale set 1 was adopted, proven ours by our owner label"
        );
        assert_eq!(
            ready_reason(
                7,
                HowReady::CreatedEarlier,
                &[Evidence::StoredId, Evidence::OwnerLabel],
                true
            ),
            "GitHub scale set 7 was created by this controller earlier, and is still there, \
             proven ours by the GitHub id we stored and our owner label; GitHub had deleted \
             the stored one, so its message cursor was reset"
        );
        for how in [
            HowReady::Created,
            HowReady::CreatedEarlier,
            HowReady::AdoptedEarlier,
            HowReady::Adopted,
            HowReady::Known,
        ] {
            let text = ready_reason(
                3,
                how,
                &[Evidence::CreatedThisRun, Evidence::StoredId],
                false,
            );
            assert!(
                !text.contains('[') && !text.contains("CreatedThisRun"),
                "{text}"
            );
            assert!(!text.starts_with("ready"), "the badge says ready: {text}");
            assert_eq!(text.matches("GitHub").count(), 2, "{text}");
        }
        assert_eq!(HowReady::Created.code(), ReasonCode::ScaleSetCreated);
        assert_eq!(HowReady::Known.code(), ReasonCode::ScaleSetConfirmed);
    }

    #[test]
    fn a_create_intent_names_the_scale_set_as_written() {
        assert_eq!(
            create_intent_reason("linux-x64", 1),
            "creating scale set linux-x64 on GitHub, in runner group 1"
        );
    }
}
