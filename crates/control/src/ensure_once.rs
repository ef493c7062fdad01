//! Ensuring one scale set outside the supervisor, for tools and tests (the API's create no
//! longer calls it: it records the scale set and the worker ensures it): the very ensure step the
//! worker runs (runner group by name, the one adoption driver, intent recorded before the create
//! POST, the outcome recorded in the store with an event), under the scale set's lease, taken for
//! the duration and released after, so a worker serving the same scale set is never doubled.
//!
//! Nothing here listens: a session the machine hands over (policy `any`) is deleted at once, so
//! the worker that serves the scale set next finds no session of ours in its way.
//!
//! Nothing here waits either: one run of the adoption machine per call. When it asks to be
//! retried (a transient GitHub failure), the scale set is left `pending` with the reason, and
//! the worker's task retries it with backoff (docs/scaling.md, "Who retries what").

use std::collections::BTreeMap;
use std::sync::Arc;

use scaleset_adopt::Refusal;
use scaleset_store::{Acquisition, ScaleSetId, Store, SystemClock};

use crate::checkpoint::NoCheckpoints;
use crate::client_factory::{ClientFactory, Observed};
use crate::ensure::{Ensured, ImportedWrites, ensure};
use crate::error::{Error, store};
use crate::identity::ControllerIdentity;
use crate::metrics::Metrics;
use crate::policies::Policies as _;
use crate::session;
use crate::shared::{RunnerGroups, Shared};
use scaleset_settings::Settings;

/// How one [`EnsureOnce::run`] ended. The scale set's row (state, reason, provenance,
/// evidence, events) says the rest; read it after.
#[derive(Debug)]
pub enum EnsureResult {
    /// The scale set is ours on GitHub under this id.
    Ready {
        /// GitHub's id.
        github_id: i64,
    },
    /// Not servable now: refused (with the machine's refusal), misconfigured or failed; the
    /// stored state and reason say which. The worker re-checks it later.
    NotReady {
        /// The refusal, when adoption refused it.
        refusal: Option<Refusal>,
    },
    /// Another holder (a worker) has the scale set's lease: it runs the same ensure itself,
    /// so nothing was done here.
    Busy {
        /// The lease holder.
        holder: String,
    },
}

/// Runs the ensure step once per call, outside the [`crate::Controller`].
pub struct EnsureOnce {
    shared: Shared,
}

impl std::fmt::Debug for EnsureOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnsureOnce")
            .field("identity", &self.shared.identity)
            .finish_non_exhaustive()
    }
}

impl EnsureOnce {
    /// An ensure step over `store`, with clients from `clients`, recording its GitHub calls in
    /// `metrics` (share the controller's when one runs in the same process).
    pub fn new(
        store: Arc<dyn Store>,
        clients: Arc<dyn ClientFactory>,
        identity: ControllerIdentity,
        settings: Settings,
        metrics: Arc<Metrics>,
    ) -> Self {
        let tools_refresh = settings.runner_tools_refresh();
        Self {
            shared: Shared {
                store,
                clients: Arc::new(Observed::new(clients, &metrics)),
                providers: BTreeMap::new(),
                identity,
                settings,
                metrics,
                clock: Arc::new(SystemClock),
                checkpoints: Arc::new(NoCheckpoints),
                runner_groups: RunnerGroups::default(),
                starting: tokio::sync::Semaphore::new(1),
                recoveries: Default::default(),
                renewals: Default::default(),
                samples: Default::default(),
                provider_health: Default::default(),
                boots: Default::default(),
                removal_requests: Default::default(),
                retries: Default::default(),
                runner_tools: crate::runner_tools::RunnerTools::new(tools_refresh),
                refused_ids: Default::default(),
            },
        }
    }

    /// Ensures scale set `id` once as lease holder `holder` (give it a name no worker uses).
    ///
    /// # Errors
    ///
    /// A store failure, a client that cannot be built, or an adoption the driver had to stop
    /// (see [`crate::adoption::run_once`]); the stored state is left as the ensure recorded it.
    pub async fn run(&self, id: ScaleSetId, holder: &str) -> Result<EnsureResult, Error> {
        let shared = &self.shared;
        let lease = match shared
            .store
            .acquire_lease(id, holder, shared.settings.lease_ttl)
            .await
            .map_err(store("acquiring the lease to ensure"))?
        {
            Acquisition::Acquired(lease) => lease,
            Acquisition::Held { holder, .. } => return Ok(EnsureResult::Busy { holder }),
        };
        let result = self.ensure_held(id, &lease).await;
        // Released even after a failure, so a worker can take the scale set at once.
        let _ = shared.store.release_lease(&lease).await;
        result
    }

    async fn ensure_held(
        &self,
        id: ScaleSetId,
        lease: &scaleset_store::Lease,
    ) -> Result<EnsureResult, Error> {
        let shared = &self.shared;
        let scale_set = shared
            .store
            .get_scale_set(id)
            .await
            .map_err(store("reading the scale set to ensure"))?;
        let client = shared.clients.client(&scale_set).await?;
        // One attempt: a retry the machine asks for is the worker's to wait for (the request
        // answers at once with the state the ensure recorded, `pending`).
        // Never holding the session, it writes nothing to a set imported from GARM.
        Ok(
            match ensure(shared, &client, lease, id, 0, None, ImportedWrites::Wait).await? {
                Ensured::Ready {
                    github_id, session, ..
                } => {
                    if let Some(session) = session {
                        // Best effort: a session left open expires on GitHub.
                        let command = session::Command::Delete {
                            scale_set: github_id,
                            session: &session.session_id,
                        };
                        let _ = session::execute(&client, command).await;
                    }
                    EnsureResult::Ready {
                        github_id: i64::from(github_id),
                    }
                }
                Ensured::Wait { refusal, .. } => EnsureResult::NotReady { refusal },
                Ensured::Retry { .. } => EnsureResult::NotReady { refusal: None },
            },
        )
    }
}
