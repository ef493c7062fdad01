//! One scale set's supervised task: lease → ensure → listen, level-triggered, with backoff. It
//! never returns on failure (it records the state and waits); it ends only when cancelled, or
//! when the scale set is disabled or gone.
//!
//! **The one wait.** No step sleeps. A step says what to do next, as kube-runtime's `reconcile`
//! returns `Action::requeue(after)`: the ensure returns [`Ensured::Retry`] or
//! [`Ensured::Wait`], the listener [`ListenEnd::Wait`] with the session attempt to resume, a
//! failure the task's own backoff. The pass then ends, which gives the start permit back, and
//! the task waits here, jittered and cancel-aware, holding nothing but the facts it resumes
//! with (the adoption attempt number, the session attempt); the lease is not renewed while it
//! waits, and the next pass takes it again first. A stop during the wait ends the task at
//! once; a stop during a pass stops the step where it is (docs/scaling.md, "Who retries
//! what").
//!
//! The wait itself is [`crate::wait`]'s, which every other wait in this crate goes through
//! too.

use std::sync::Arc;
use std::time::Duration;

use scaleset_github::{GithubScaleSetId, MessageId};
use scaleset_provider::Pool;
use scaleset_store::{Acquisition, Lease, ReasonCode, ScaleSetId, ScaleSetState};
use tokio_util::sync::CancellationToken;

use crate::ensure::{Ensured, ImportedWrites, ensure, record};
use crate::error::{Error, chain, store};
use crate::listener::{ListenEnd, Listener, SessionAttempt};
use crate::scaler::Runners;
use crate::shared::Shared;
use crate::wait::{Waited, wait_jittered};
#[cfg(test)]
use scaleset_github::Client;

/// What to do after one pass.
enum Next {
    /// Run again after this long.
    After(Duration),
    /// The task is done (disabled, deleted, or cancelled).
    Stop,
}

/// What a task carries from one pass to the next across its wait.
#[derive(Debug, Default)]
struct Resume {
    /// The adoption machine's attempt number for the next ensure (0 unless it asked for a
    /// retry).
    ensure_attempt: u32,
    /// A session attempt to resume on the scale set GitHub knows by this id, without ensuring
    /// again (the ensure was done, and its id is still the stored one).
    session: Option<(GithubScaleSetId, SessionAttempt)>,
}

/// Serves one scale set until `cancel` fires or it is disabled or deleted. However it ends
/// (short of an abort, which stands for a crash), the lease it still holds is released, so the
/// worker the supervisor hands the scale set to takes it at once.
pub(crate) async fn serve(shared: Arc<Shared>, id: ScaleSetId, cancel: CancellationToken) {
    let mut held = None;
    serve_holding(&shared, id, &cancel, &mut held).await;
    shared.retries.forget(id);
    if let Some(lease) = held {
        // Lost already (taken over) is fine: the new holder has it.
        let _ = shared.store.release_lease(&lease).await;
    }
    // The task is over: this worker claims nothing of the scale set any more.
    shared.metrics.lease_settled(id);
}

async fn serve_holding(
    shared: &Shared,
    id: ScaleSetId,
    cancel: &CancellationToken,
    held: &mut Option<Lease>,
) {
    let mut failures = 0u32;
    let mut resume = Resume::default();
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let wait = match pass(shared, id, cancel, held, &mut resume).await {
            Ok(Next::Stop) => return,
            Ok(Next::After(wait)) => {
                failures = 0;
                wait
            }
            Err(error) if error.is_cancelled() => return,
            Err(error) => {
                resume = Resume::default();
                failures += 1;
                let reason = chain(&error);
                tracing::error!(error = %reason, failures, "scale set task failed; backing off");
                if error.is_lease_lost() {
                    *held = None;
                } else if let Some(lease) = held.as_ref() {
                    // Fenced: a failure met after another worker took the set over (this one
                    // cut off from the database meanwhile) is not the set's state; written
                    // late, its `error` stayed on a set the other worker served.
                    let recorded = record(shared, lease, ReasonCode::TaskFailed, &reason, |s| {
                        if s.state == ScaleSetState::Ready || s.state == ScaleSetState::Pending {
                            s.state = ScaleSetState::Error;
                        }
                    })
                    .await;
                    if recorded.as_ref().is_err_and(Error::is_lease_lost) {
                        *held = None;
                    }
                }
                // Without a lease (its acquisition failed) the set is not this worker's to
                // mark: the failure is logged above, and whoever serves it records its state.
                shared.settings.backoff(failures)
            }
        };
        // The task's one wait (see the module documentation), which an operator's "retry
        // now" ends early (`shared::Retries`).
        let wake = shared.retries.wake_of(id);
        let waited = tokio::select! {
            waited = wait_jittered(cancel, wait) => waited,
            () = wake.notified() => Waited::Elapsed,
        };
        if waited == Waited::Cancelled {
            return;
        }
    }
}

async fn pass(
    shared: &Shared,
    id: ScaleSetId,
    cancel: &CancellationToken,
    held: &mut Option<Lease>,
    resume: &mut Resume,
) -> Result<Next, Error> {
    // Held until the listener's session is open (or this pass ends): the recovery of the
    // instances runs beside the listener, not under this permit (issue 35).
    let starting = tokio::select! {
        () = cancel.cancelled() => return Ok(Next::Stop),
        permit = shared.starting.acquire() => permit.ok(),
    };
    // The lease runs from before it was asked for, as far as this worker can prove: the
    // listener's fence counts its TTL from here (`Listener::lease_deadline`).
    let asked = tokio::time::Instant::now();
    let lease = match shared
        .store
        .acquire_lease(id, &shared.settings.worker, shared.settings.lease_ttl)
        .await
    {
        Ok(Acquisition::Acquired(lease)) => {
            *held = Some(lease.clone());
            shared.metrics.lease_settled(id);
            lease
        }
        Ok(Acquisition::Held { holder, .. }) => {
            *held = None;
            // Another worker's now: not ours to doubt.
            shared.metrics.lease_settled(id);
            tracing::debug!(%holder, "lease held by another worker");
            return Ok(Next::After(shared.settings.lease_ttl / 2));
        }
        Err(e) if e.is_not_found() => return Ok(Next::Stop),
        Err(e) => return Err(store("acquiring the lease")(e)),
    };
    // Read again after the ensure below: this copy is dropped here, so a listening task does
    // not keep two (docs/benchmarks.md, "Issue 35: memory").
    let (provider, client, stored_id) = {
        let scale_set = match shared.store.get_scale_set(id).await {
            Ok(s) => s,
            Err(e) if e.is_not_found() => return Ok(Next::Stop),
            Err(e) => return Err(store("reading the scale set")(e)),
        };
        if !scale_set.spec.enabled() {
            return Ok(Next::Stop);
        }
        let Some(provider) = shared
            .providers
            .get(scale_set.spec.provider().as_str())
            .cloned()
        else {
            let error = Error::UnknownProvider {
                scale_set: scale_set.spec.name().to_string(),
                provider: scale_set.spec.provider().to_string(),
            };
            record(
                shared,
                &lease,
                ReasonCode::UnknownProvider,
                &error.to_string(),
                |s| {
                    s.state = ScaleSetState::Error;
                },
            )
            .await?;
            return Ok(Next::After(shared.settings.refused_recheck));
        };
        let client = shared.clients.client(&scale_set).await?;
        (provider, client, scale_set.github_id)
    };
    let resumed = resume
        .session
        .take()
        .filter(|(github_id, _)| stored_id == Some(i64::from(*github_id)));
    let (github_id, handed, attempt) = match resumed {
        Some((github_id, attempt)) => (github_id, None, attempt),
        None => {
            // Boxed: the ensure (the adoption machine's calls) is done before listening
            // starts, so its larger future need not stay in every listening task.
            let attempt = std::mem::take(&mut resume.ensure_attempt);
            // Nothing is written to a set imported from GARM before our session is open on
            // it: the listener ensures it again then.
            let ensured = ensure(
                shared,
                &client,
                &lease,
                id,
                attempt,
                Some(cancel),
                ImportedWrites::Wait,
            );
            match Box::pin(ensured).await? {
                Ensured::Ready {
                    github_id,
                    session,
                    awaiting,
                } => (github_id, session, SessionAttempt::after_ensure(awaiting)),
                Ensured::Retry { after } => {
                    resume.ensure_attempt = attempt + 1;
                    return Ok(Next::After(after));
                }
                Ensured::Wait { after, .. } => return Ok(Next::After(after)),
            }
        }
    };
    let scale_set = shared
        .store
        .get_scale_set(id)
        .await
        .map_err(store("reading the ensured scale set"))?;
    let runners = Runners {
        shared,
        client: &client,
        provider,
        lease: &lease,
        scale_set: &scale_set,
        github_id,
        pool: Pool::new(shared.identity.pool_key(i64::from(github_id))),
        rng: fastrand::Rng::new(),
        online: std::collections::HashSet::new(),
        provider_error_shown: scale_set.provider_error.is_some(),
        last_reconciled: None,
        // What the row holds counts as written: a start that computes the same figures
        // (a fleet recovering idle, issue 35) writes no progress commit for them.
        desired_written: Some(scale_set.desired_runners),
        desired: None,
        listed: None,
        assigned: None,
        inherited: crate::planner::takeover::inherited(scale_set.takeover.as_ref(), github_id),
        touched: Default::default(),
        creating: tokio::task::JoinSet::new(),
        writes: Default::default(),
        idle_list: None,
    };
    let mut listener = Listener {
        shared,
        client: &client,
        lease: lease.clone(),
        runners,
        github_id,
        last_message_id: MessageId::from(scale_set.last_message_id),
        statistics: None,
        starting,
        jobs_waiting_shown: Some(scale_set.jobs_waiting),
        sampler: crate::sampler::Sampler::default(),
        attempt,
        lease_deadline: asked + shared.settings.lease_ttl,
    };
    let end = listener.run(handed, cancel).await?;
    Ok(match end {
        // The lease is released on the way out (`serve`).
        ListenEnd::Cancelled => Next::Stop,
        ListenEnd::Reensure => Next::After(Duration::ZERO),
        ListenEnd::Wait { after, attempt } => {
            resume.session = Some((github_id, attempt));
            Next::After(after)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without calling it.
    fn task_size<F, Fut>(_: F) -> usize
    where
        F: FnOnce(Arc<Shared>, ScaleSetId, CancellationToken) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    fn poll_size<'a, F, Fut>(_: F) -> usize
    where
        F: FnOnce(&'a Client, &'a mut scaleset_github::Session, MessageId, u32) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    /// Every scale set's task is allocated at its full size for as long as it runs, so the
    /// rare, large steps (ensure, message handling, session recreation, connection opening,
    /// token refresh) are boxed and an idle listener holds little more than its waiting poll.
    /// Unboxed, the task was 27 KiB and the poll 11 KiB in a debug build (release is smaller);
    /// the bounds leave room for growth and fail if a large future is inlined again.
    #[test]
    fn an_idle_listeners_task_stays_small() {
        let task = task_size(serve);
        let poll = poll_size(Client::get_message);
        assert!(
            task <= 8 * 1024,
            "the scale set task future is {task} bytes"
        );
        assert!(poll <= 4 * 1024, "the get_message future is {poll} bytes");
        assert!(poll < task, "the task holds the poll");
    }
}
