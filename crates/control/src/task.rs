//! One scale set's supervised task: lease → ensure → listen, level-triggered, with backoff. It
//! never returns on failure (it records the state and waits); it ends only when cancelled, or
//! when the scale set is disabled or gone.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use scaleset_provider::{Pool, Provider};
use scaleset_store::{Acquisition, Clock, ScaleSetId, ScaleSetState, Store};
use tokio_util::sync::CancellationToken;

use crate::checkpoint::Checkpoints;
use crate::client_factory::ClientFactory;
use crate::ensure::{Ensured, ensure, record};
use crate::error::{Error, chain, store};
use crate::identity::ControllerIdentity;
use crate::listener::{ListenEnd, Listener};
use crate::metrics::Metrics;
use crate::scaler::Runners;
use crate::settings::Settings;

/// What every task shares.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clients: Arc<dyn ClientFactory>,
    pub(crate) providers: BTreeMap<String, Arc<dyn Provider>>,
    pub(crate) identity: ControllerIdentity,
    pub(crate) settings: Settings,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) checkpoints: Arc<dyn Checkpoints>,
}

/// What to do after one pass.
enum Next {
    /// Run again after this long.
    After(Duration),
    /// The task is done (disabled, deleted, or cancelled).
    Stop,
}

/// Serves one scale set until `cancel` fires or it is disabled or deleted.
pub(crate) async fn serve(shared: Arc<Shared>, id: ScaleSetId, cancel: CancellationToken) {
    let mut failures = 0u32;
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let wait = match pass(&shared, id, &cancel).await {
            Ok(Next::Stop) => return,
            Ok(Next::After(wait)) => {
                failures = 0;
                wait
            }
            Err(error) => {
                failures += 1;
                let reason = chain(&error);
                tracing::error!(error = %reason, failures, "scale set task failed; backing off");
                if !error.is_lease_lost() {
                    let _ = record(&shared, id, "error", &reason, |s| {
                        if s.state == ScaleSetState::Ready || s.state == ScaleSetState::Pending {
                            s.state = ScaleSetState::Error;
                        }
                    })
                    .await;
                }
                shared.settings.backoff(failures)
            }
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

async fn pass(shared: &Shared, id: ScaleSetId, cancel: &CancellationToken) -> Result<Next, Error> {
    let lease = match shared
        .store
        .acquire_lease(id, &shared.settings.worker, shared.settings.lease_ttl)
        .await
    {
        Ok(Acquisition::Acquired(lease)) => lease,
        Ok(Acquisition::Held { holder, .. }) => {
            tracing::debug!(%holder, "lease held by another worker");
            return Ok(Next::After(shared.settings.lease_ttl / 2));
        }
        Ok(_) => return Ok(Next::After(shared.settings.lease_ttl / 2)),
        Err(e) if e.is_not_found() => return Ok(Next::Stop),
        Err(e) => return Err(store("acquiring the lease")(e)),
    };
    let scale_set = match shared.store.get_scale_set(id).await {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Ok(Next::Stop),
        Err(e) => return Err(store("reading the scale set")(e)),
    };
    if !scale_set.spec.enabled {
        return Ok(Next::Stop);
    }
    let Some(provider) = shared.providers.get(&scale_set.spec.provider).cloned() else {
        let error = Error::UnknownProvider {
            scale_set: scale_set.spec.name.clone(),
            provider: scale_set.spec.provider.clone(),
        };
        record(shared, id, "config_error", &error.to_string(), |s| {
            s.state = ScaleSetState::Error;
        })
        .await?;
        return Ok(Next::After(shared.settings.refused_recheck));
    };
    let client = shared.clients.client(&scale_set).await?;
    let (github_id, handed) = match ensure(shared, &client, &lease, id).await? {
        Ensured::Ready { github_id, session } => (github_id, session),
        Ensured::Wait { after, .. } => return Ok(Next::After(after)),
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
        pool: Pool::new(shared.identity.pool_key(github_id)),
        rng: fastrand::Rng::new(),
        online: std::collections::HashSet::new(),
        last_reconciled: None,
    };
    let mut listener = Listener {
        shared,
        client: &client,
        lease: lease.clone(),
        runners,
        github_id,
        last_message_id: scale_set.last_message_id,
        statistics: None,
    };
    let end = listener.run(handed, cancel).await?;
    Ok(match end {
        ListenEnd::Cancelled => {
            let _ = shared.store.release_lease(&lease).await;
            Next::Stop
        }
        ListenEnd::Reensure => Next::After(Duration::ZERO),
        ListenEnd::ForeignSession => Next::After(shared.settings.foreign_session_recheck),
    })
}
