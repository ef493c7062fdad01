//! The [`Controller`]: a supervisor that watches the store's scale sets and runs one task per
//! enabled scale set, each in its own `scale_set` span, started, restarted and stopped as scale
//! sets are added, changed, disabled or deleted. It runs until its cancellation token fires,
//! then stops every task cleanly (sessions deleted). Dropping it mid-run aborts every task, as
//! a crash would.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use prometheus_client::registry::Registry;
use scaleset_provider::Provider;
use scaleset_store::{
    Clock, InstanceStatus, ScaleSet, ScaleSetId, ScaleSetSpec, ScaleSetState, Store, SystemClock,
};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument as _;

use crate::checkpoint::{Checkpoints, NoCheckpoints};
use crate::client_factory::ClientFactory;
use crate::error::{Error, chain, store};
use crate::identity::ControllerIdentity;
use crate::metrics::{Metrics, StateLabel, StatusLabel};
use crate::settings::Settings;
use crate::task::{RunnerGroups, Shared, serve};

/// The control loop of one controller over all scale sets in its store.
pub struct Controller {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("identity", &self.shared.identity)
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

struct Running {
    spec: ScaleSetSpec,
    cancel: CancellationToken,
    handle: AbortOnDropHandle<()>,
}

/// The spec without the runner-group id the ensure caches in it (caching is not a change).
fn watched(spec: &ScaleSetSpec) -> ScaleSetSpec {
    let mut spec = spec.clone();
    spec.runner_group.id = None;
    spec
}

impl Controller {
    /// A controller over `store`, with GitHub clients from `clients` and the named
    /// `providers`. Its metrics are registered in `registry`.
    pub fn new(
        store: Arc<dyn Store>,
        clients: Arc<dyn ClientFactory>,
        providers: BTreeMap<String, Arc<dyn Provider>>,
        identity: ControllerIdentity,
        settings: Settings,
        registry: &mut Registry,
    ) -> Self {
        let starting = tokio::sync::Semaphore::new(settings.max_concurrent_starts.max(1));
        Self {
            shared: Arc::new(Shared {
                store,
                clients,
                providers,
                identity,
                settings,
                metrics: Arc::new(Metrics::new(registry)),
                clock: Arc::new(SystemClock),
                checkpoints: Arc::new(NoCheckpoints),
                runner_groups: RunnerGroups::default(),
                starting,
            }),
        }
    }

    fn shared_mut(&mut self) -> &mut Shared {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared,
            None => unreachable!("the shared state is only shared once run starts"),
        }
    }

    /// Reads "now" for bootstrap deadlines from `clock` (tests move a manual clock).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.shared_mut().clock = clock;
        self
    }

    /// Reports every [`crate::Checkpoint`] reached to `checkpoints`.
    #[must_use]
    pub fn with_checkpoints(mut self, checkpoints: Arc<dyn Checkpoints>) -> Self {
        self.shared_mut().checkpoints = checkpoints;
        self
    }

    /// The metrics this controller records.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.shared.metrics.clone()
    }

    /// Runs until `cancel` fires, then stops every task cleanly and returns. A failing scale
    /// set never stops the others; a failing store read is retried at the next tick.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), Error> {
        let mut running: HashMap<ScaleSetId, Running> = HashMap::new();
        loop {
            match self.shared.store.list_scale_sets(None).await {
                Ok(scale_sets) => {
                    self.reconcile(&scale_sets, &mut running, &cancel);
                    self.observe(&scale_sets).await;
                }
                Err(e) => {
                    let error = store("listing scale sets")(e);
                    tracing::error!(error = %chain(&error), "cannot read the scale sets; retrying");
                }
            }
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(self.shared.settings.watch_interval) => {}
            }
        }
        for task in running.values() {
            task.cancel.cancel();
        }
        for (_, task) in running {
            let _ = task.handle.await;
        }
        Ok(())
    }

    fn reconcile(
        &self,
        scale_sets: &[ScaleSet],
        running: &mut HashMap<ScaleSetId, Running>,
        cancel: &CancellationToken,
    ) {
        let wanted: HashMap<ScaleSetId, &ScaleSet> = scale_sets
            .iter()
            .filter(|s| s.spec.enabled)
            .map(|s| (s.id, s))
            .collect();
        running.retain(|id, task| {
            let keep = wanted
                .get(id)
                .is_some_and(|s| watched(&s.spec) == task.spec)
                && !task.handle.is_finished();
            if !keep {
                // Stopped cleanly (session deleted) in the background; a changed spec starts
                // a new task below once this one is gone.
                task.cancel.cancel();
            }
            keep || !task.handle.is_finished()
        });
        for (id, scale_set) in wanted {
            if running.contains_key(&id) {
                continue;
            }
            let child = cancel.child_token();
            let span = tracing::info_span!(
                "scale_set",
                id = %id,
                name = %scale_set.spec.name,
                runner_group = %scale_set.spec.runner_group.name,
            );
            let handle = AbortOnDropHandle::new(tokio::spawn(
                serve(self.shared.clone(), id, child.clone()).instrument(span),
            ));
            running.insert(
                id,
                Running {
                    spec: watched(&scale_set.spec),
                    cancel: child,
                    handle,
                },
            );
        }
    }

    async fn observe(&self, scale_sets: &[ScaleSet]) {
        let metrics = &self.shared.metrics;
        for state in ScaleSetState::ALL {
            let count = scale_sets.iter().filter(|s| s.state == *state).count();
            metrics
                .scale_sets
                .get_or_create(&StateLabel {
                    state: state.as_str().to_owned(),
                })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        // One query for the whole fleet (a list per scale set was 1,000 reads a second at
        // 10,000 idle scale sets).
        let Ok(counts) = self.shared.store.count_instances_by_status().await else {
            return;
        };
        let by_status: HashMap<InstanceStatus, i64> = counts
            .into_iter()
            .map(|(status, n)| (status, i64::try_from(n).unwrap_or(i64::MAX)))
            .collect();
        for status in InstanceStatus::ALL {
            metrics
                .runners
                .get_or_create(&StatusLabel {
                    status: status.as_str().to_owned(),
                })
                .set(by_status.get(status).copied().unwrap_or(0));
        }
    }
}
