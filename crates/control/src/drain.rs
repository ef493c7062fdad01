//! The task of a scale set that is no longer served but still has instances (disabled, or
//! drained through the API): lease → one drain pass ([`crate::scaler`]'s `drain`) → wait,
//! until no instance is left, then it lets the lease go so that a delete can take it. It never
//! ensures the scale set or opens a session (nothing may reach new runners), and it stops as
//! soon as the scale set is enabled again (the supervisor then starts the serving task) or
//! deleted.
//!
//! Without it a disabled scale set's records went stale: instances counted busy long after
//! their runners were gone, asked-for deletions never carried out, and the delete refused for
//! ever (issue 29 item 6).

use std::sync::Arc;
use std::time::Duration;

use scaleset_github::GithubScaleSetId;
use scaleset_provider::Pool;
use scaleset_store::{Acquisition, Lease, ScaleSetId};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, chain, store};
use crate::scaler::Runners;
use crate::shared::Shared;
use crate::wait::{Waited, wait_jittered};

/// Drains one scale set until nothing is left, `cancel` fires, or it is enabled or deleted.
/// The lease it still holds is released however it ends (short of an abort).
pub(crate) async fn drain(shared: Arc<Shared>, id: ScaleSetId, cancel: CancellationToken) {
    let mut held = None;
    drain_holding(&shared, id, &cancel, &mut held).await;
    if let Some(lease) = held {
        // Lost already (taken over) is fine: the new holder has it.
        let _ = shared.store.release_lease(&lease).await;
    }
}

/// What the last pass left, so that an event is written when it changes, not every pass.
type Shown = Option<(usize, usize)>;

async fn drain_holding(
    shared: &Shared,
    id: ScaleSetId,
    cancel: &CancellationToken,
    held: &mut Option<Lease>,
) {
    let mut failures = 0u32;
    let mut shown: Shown = None;
    loop {
        if cancel.is_cancelled() {
            return;
        }
        // The step never waits; the task waits (jittered, cancel-aware) in `wait`.
        let wait = match pass(shared, id, held, &mut shown).await {
            Ok(Some(wait)) => {
                failures = 0;
                wait
            }
            Ok(None) => return,
            Err(error) => {
                failures += 1;
                tracing::warn!(error = %chain(&error), failures, "draining failed; backing off");
                if error.is_lease_lost() {
                    *held = None;
                }
                shared.settings.backoff(failures)
            }
        };
        if wait_jittered(cancel, wait).await == Waited::Cancelled {
            return;
        }
    }
}

/// One pass: `Some(wait)` to run again after `wait`, `None` when the task is done.
async fn pass(
    shared: &Shared,
    id: ScaleSetId,
    held: &mut Option<Lease>,
    shown: &mut Shown,
) -> Result<Option<Duration>, Error> {
    let lease = match shared
        .store
        .acquire_lease(id, &shared.settings.worker, shared.settings.lease_ttl)
        .await
    {
        Ok(Acquisition::Acquired(lease)) => {
            *held = Some(lease.clone());
            lease
        }
        Ok(_) => {
            *held = None;
            return Ok(Some(shared.settings.lease_ttl / 2));
        }
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(store("acquiring the lease to drain")(e)),
    };
    let scale_set = match shared.store.get_scale_set(id).await {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(store("reading the scale set to drain")(e)),
    };
    if scale_set.spec.enabled() {
        return Ok(None);
    }
    let Some(provider) = shared
        .providers
        .get(scale_set.spec.provider().as_str())
        .cloned()
    else {
        return Err(Error::UnknownProvider {
            scale_set: scale_set.spec.name().to_string(),
            provider: scale_set.spec.provider().to_string(),
        });
    };
    let client = shared.clients.client(&scale_set).await?;
    let github_id = GithubScaleSetId::from(scale_set.github_id.unwrap_or(0));
    let mut runners = Runners {
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
        desired_written: None,
        desired: None,
        listed: None,
        assigned: None,
        inherited: crate::planner::takeover::inherited(scale_set.takeover.as_ref(), github_id),
        touched: Default::default(),
        creating: tokio::task::JoinSet::new(),
        writes: Default::default(),
        idle_list: None,
    };
    let left = runners.drain().await?;
    let name = scale_set.spec.name().as_str();
    if left.instances == 0 {
        if shown.is_some() || left.removed > 0 {
            runners
                .drain_event(
                    scaleset_store::ReasonCode::Drained,
                    &format!(
                        "drained: no instance is left; delete it with \
                         `scalesetctl scale-set delete {name}`, or enable it again"
                    ),
                )
                .await?;
        }
        return Ok(None);
    }
    let now = Some((left.instances, left.busy));
    if *shown != now {
        *shown = now;
        runners
            .drain_event(
                scaleset_store::ReasonCode::Draining,
                &format!(
                    "draining: {} instance(s) left, {} of them running a job (left to finish); \
                     idle runners are retired",
                    left.instances, left.busy
                ),
            )
            .await?;
    }
    Ok(Some(shared.settings.drain_interval))
}
