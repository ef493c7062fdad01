//! The [`Controller`]: a supervisor that watches the store's scale sets and runs one task per
//! enabled scale set in this worker's share of the leases (the pure lease planner decides), each in its own `scale_set` span, started, restarted and stopped as scale
//! sets are added, changed, disabled or deleted. A disabled scale set that still has instances
//! gets a drain task instead ([`crate::drain`]), until none is left; and a record an
//! interrupted create of an older server left disabled is enabled ([`crate::interrupted`]). It runs until its cancellation token fires,
//! then stops every task cleanly (sessions deleted). Dropping it mid-run aborts every task, as
//! a crash would.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use prometheus_client::registry::Registry;
use scaleset_provider::Provider;
use scaleset_store::{
    Clock, EntityId, InstanceStatus, ScaleSet, ScaleSetId, ScaleSetSpec, ScaleSetState, Store,
    SystemClock,
};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument as _;

use crate::checkpoint::{Checkpoints, NoCheckpoints};
use crate::client_factory::{ClientFactory, Observed};
use crate::drain::drain;
use crate::error::{Error, chain, store};
use crate::hands_off::HandsOff;
use crate::identity::ControllerIdentity;
use crate::metrics::{Metrics, SetLabels, SetReading, StateLabel, StatusLabel};
use crate::observed_provider::ObservedProvider;
use crate::planner::exports::{ExportInput, Exports, plan_exports};
use crate::planner::leases::{LeaseInput, plan_leases};
use crate::planner::orphans::{SweepClock, sweep_due};
use crate::policies::Policies as _;
use crate::shared::{RunnerGroups, Shared};
use crate::task::serve;
use crate::watch::Watch;
use scaleset_settings::Settings;

/// The control loop of one controller over all scale sets in its store.
pub struct Controller {
    shared: Arc<Shared>,
    hands_off: HandsOff,
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
    spec.set_runner_group_id(None);
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
        let tools_refresh = settings.runner_tools_refresh();
        let starting = tokio::sync::Semaphore::new(settings.max_concurrent_starts.max(1));
        let metrics = Arc::new(Metrics::new(registry));
        let providers = providers
            .into_iter()
            .map(|(name, provider)| {
                let observed: Arc<dyn Provider> =
                    Arc::new(ObservedProvider::new(&name, provider, &metrics));
                (name, observed)
            })
            .collect::<BTreeMap<String, Arc<dyn Provider>>>();
        let recoveries =
            crate::shared::Recoveries::new(providers.keys(), settings.max_concurrent_recoveries);
        let hands_off = HandsOff::new(settings.worker.clone());
        Self {
            hands_off,
            shared: Arc::new(Shared {
                store,
                clients: Arc::new(Observed::new(clients, &metrics)),
                providers,
                identity,
                settings,
                metrics,
                clock: Arc::new(SystemClock),
                checkpoints: Arc::new(NoCheckpoints),
                runner_groups: RunnerGroups::default(),
                starting,
                recoveries,
                renewals: Default::default(),
                samples: Default::default(),
                provider_health: Default::default(),
                boots: Default::default(),
                removal_requests: Default::default(),
                retries: Default::default(),
                runner_tools: crate::runner_tools::RunnerTools::new(tools_refresh),
                refused_ids: Default::default(),
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

    /// The clock the loop reads "now" from (the one [`Self::with_clock`] gave it).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.shared.clock.clone()
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

    /// The scale sets this controller lets go of while a decommission in the same process
    /// takes them over ([`HandsOff`]); shared, so it may be handed out before [`Self::run`].
    pub fn hands_off(&self) -> HandsOff {
        self.hands_off.clone()
    }

    /// Runs until `cancel` fires, then stops every task cleanly and returns. A failing scale
    /// set never stops the others; a failing store read is retried at the next tick.
    ///
    /// Every tick it also heartbeats this worker in the store's registry and plans its leases
    /// ([`crate::plan_leases`]): it runs tasks only for the scale sets in its fair share among
    /// the live workers, so several workers on one database spread the scale sets; a task it
    /// stops for being over the share deletes its session and releases its lease. On the way
    /// out it removes itself from the registry, so the others rebalance at once. A worker an
    /// operator drains (`scalesetctl worker drain NAME`) serves nothing and releases every
    /// lease, so the others take its scale sets before it is stopped.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), Error> {
        let mut running: HashMap<ScaleSetId, Running> = HashMap::new();
        let mut sweeps = Sweeps::new();
        // What this worker exports; kept as it was when the registry cannot be read.
        let mut exports: Exports<ScaleSetId> = Exports::default();
        // A drain of an earlier process of this name (killed before it left the registry)
        // ends here: a worker that starts serves its share (issue 33 item 4).
        if let Err(e) = self
            .shared
            .store
            .remove_worker(&self.shared.settings.worker)
            .await
        {
            let error = store("entering the worker registry")(e);
            tracing::warn!(error = %chain(&error), "a drain of an earlier run of this worker may still hold");
        }
        let mut watch = Watch::default();
        loop {
            match watch
                .refresh(&*self.shared.store, tokio::time::Instant::now())
                .await
            {
                Ok(_) => {
                    let scale_sets = watch.scale_sets();
                    if let Err(error) = crate::interrupted::resume(&self.shared, &scale_sets).await
                    {
                        tracing::warn!(error = %chain(&error), "cannot resume scale sets an interrupted create left; retrying");
                    }
                    // Those a decommission in this process takes over are neither served nor
                    // drained: their tasks stop (and release their leases) below.
                    let ours: Vec<&ScaleSet> = scale_sets
                        .iter()
                        .filter(|s| !self.hands_off.contains(s.id))
                        .copied()
                        .collect();
                    self.read_removal_requests().await;
                    self.notice_retries(&ours);
                    let draining = self.draining(&ours, &running).await;
                    let (share, read) = self.plan_leases(&ours, &draining, &running).await;
                    self.reconcile(&ours, &draining, &share, &mut running, &cancel);
                    if let Some(read) = read {
                        let all: Vec<ScaleSetId> = scale_sets.iter().map(|s| s.id).collect();
                        let serving: BTreeSet<ScaleSetId> =
                            share.iter().chain(running.keys()).copied().collect();
                        exports = plan_exports(&ExportInput {
                            worker: &self.shared.settings.worker,
                            live_workers: &read.live_workers,
                            draining: &read.draining,
                            scale_sets: &all,
                            held: &read.held,
                            serving: &serving,
                        });
                    }
                    self.observe(&scale_sets, &exports).await;
                    let unensured = scale_sets
                        .iter()
                        .any(|s| s.spec.enabled() && s.github_id.is_none());
                    sweeps.tick(&self.shared, unensured, !self.hands_off.is_empty());
                }
                Err(e) => {
                    let error = store("listing scale sets")(e);
                    tracing::error!(error = %chain(&error), "cannot read the scale sets; retrying");
                }
            }
            if crate::wait::wait_for(&cancel, self.shared.settings.watch_interval).await
                == crate::wait::Waited::Cancelled
            {
                break;
            }
        }
        // A sweep cut short is done again by the next process: each step is idempotent.
        drop(sweeps);
        for task in running.values() {
            task.cancel.cancel();
        }
        for (_, task) in running {
            let _ = task.handle.await;
        }
        if let Err(e) = self
            .shared
            .store
            .remove_worker(&self.shared.settings.worker)
            .await
        {
            let error = store("leaving the worker registry")(e);
            tracing::warn!(error = %chain(&error), "the other workers count this one until its heartbeat expires");
        }
        Ok(())
    }

    /// Reads which scale sets have an operator's removal request, for the listeners
    /// ([`crate::shared::RemovalRequests`]); a failed read makes every listener list its rows.
    async fn read_removal_requests(&self) {
        let read = match self.shared.store.scale_sets_with_removal_requests().await {
            Ok(ids) => Some(ids.into_iter().collect()),
            Err(e) => {
                let error = store("listing the scale sets with removal requests")(e);
                tracing::warn!(error = %chain(&error), "cannot tell which scale sets have removal requests; every listener lists its instances");
                None
            }
        };
        self.shared.removal_requests.set(read);
    }

    /// Acts on the operators' new "retry now" requests ([`crate::shared::Retries`]): the
    /// scale set's provider back-off ends and its task wakes. A request for a scale set
    /// another worker serves is that worker's to act on (it reads the same rows).
    fn notice_retries(&self, scale_sets: &[&ScaleSet]) {
        let read: Vec<(ScaleSetId, Option<scaleset_store::Timestamp>)> = scale_sets
            .iter()
            .map(|s| (s.id, s.retry_requested_at))
            .collect();
        let now = std::time::Instant::now();
        for id in self.shared.retries.noticed(&read) {
            tracing::info!(scale_set = %id, "retry asked for: the provider and bootstrap back-offs end and the scale set tries again now");
            self.shared.provider_health.retry_now(id, now);
            self.shared.boots.retry_now(id, self.shared.clock.now());
            self.shared.retries.wake(id);
        }
    }

    /// The disabled scale sets that still have instances: each needs a drain task. When the
    /// store cannot say, the drain tasks running go on (they find out themselves).
    async fn draining(
        &self,
        scale_sets: &[&ScaleSet],
        running: &HashMap<ScaleSetId, Running>,
    ) -> BTreeSet<ScaleSetId> {
        let with_instances: BTreeSet<ScaleSetId> = match self
            .shared
            .store
            .scale_sets_with_instances()
            .await
        {
            Ok(ids) => ids.into_iter().collect(),
            Err(e) => {
                let error = store("listing the scale sets with instances")(e);
                tracing::warn!(error = %chain(&error), "cannot tell which disabled scale sets to drain; keeping the drains running");
                running
                    .iter()
                    .filter(|(_, task)| !task.spec.enabled())
                    .map(|(id, _)| *id)
                    .collect()
            }
        };
        scale_sets
            .iter()
            .filter(|s| !s.spec.enabled() && with_instances.contains(&s.id))
            .map(|s| s.id)
            .collect()
    }

    /// Heartbeats this worker and plans which scale sets it serves, with what it read of the
    /// registry and the leases (for [`plan_exports`]). When the registry or the leases cannot
    /// be read, it keeps serving what it runs (their tasks find out about the store
    /// themselves) and takes nothing new.
    async fn plan_leases(
        &self,
        scale_sets: &[&ScaleSet],
        draining: &BTreeSet<ScaleSetId>,
        running: &HashMap<ScaleSetId, Running>,
    ) -> (BTreeSet<ScaleSetId>, Option<RegistryRead>) {
        let db = &self.shared.store;
        let worker = &self.shared.settings.worker;
        let read = async {
            db.heartbeat_worker(worker, self.shared.settings.lease_ttl)
                .await?;
            Ok::<_, scaleset_store::Error>((
                db.live_workers().await?,
                db.draining_workers().await?,
                db.live_leases().await?,
            ))
        };
        let (live_workers, draining_workers, leases) = match read.await {
            Ok(read) => read,
            Err(e) => {
                let error = store("reading the worker registry and leases")(e);
                tracing::warn!(error = %chain(&error), "cannot plan the leases; keeping the scale sets being served");
                return (running.keys().copied().collect(), None);
            }
        };
        // Drains are shared out like the served scale sets: each takes the lease.
        let enabled: Vec<ScaleSetId> = scale_sets
            .iter()
            .filter(|s| s.spec.enabled() || draining.contains(&s.id))
            .map(|s| s.id)
            .collect();
        // Only this worker's own count: every worker exports its own, so a sum over the
        // scraped workers is the fleet's (each exporting everyone's read 3× with three).
        let own = leases.iter().filter(|l| &l.holder == worker).count();
        self.shared.metrics.set_leases(&HashMap::from([(
            worker.clone(),
            u64::try_from(own).unwrap_or(u64::MAX),
        )]));
        let held: Vec<(ScaleSetId, String)> = leases
            .into_iter()
            .map(|l| (l.scale_set_id, l.holder))
            .collect();
        let plan = plan_leases(&LeaseInput {
            worker,
            live_workers: &live_workers,
            draining: &draining_workers,
            scale_sets: &enabled,
            held: &held,
        });
        if !plan.release.is_empty() {
            tracing::info!(
                share = plan.share,
                live_workers = live_workers.len(),
                releasing = %plan
                    .release
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                "over this worker's share: releasing scale sets for the others"
            );
        }
        let read = RegistryRead {
            live_workers,
            draining: draining_workers,
            held,
        };
        (plan.serve.into_iter().collect(), Some(read))
    }

    fn reconcile(
        &self,
        scale_sets: &[&ScaleSet],
        draining: &BTreeSet<ScaleSetId>,
        share: &BTreeSet<ScaleSetId>,
        running: &mut HashMap<ScaleSetId, Running>,
        cancel: &CancellationToken,
    ) {
        let wanted: HashMap<ScaleSetId, &ScaleSet> = scale_sets
            .iter()
            .filter(|s| (s.spec.enabled() || draining.contains(&s.id)) && share.contains(&s.id))
            .map(|s| (s.id, *s))
            .collect();
        running.retain(|id, task| {
            let keep = wanted
                .get(id)
                .is_some_and(|s| watched(&s.spec) == task.spec)
                && !task.handle.is_finished();
            if !keep && !task.cancel.is_cancelled() {
                // Stopped cleanly (session deleted, lease released) in the background; a
                // changed spec starts a new task below once this one is gone.
                if !share.contains(id) {
                    tracing::info!(scale_set = %id, "leaving the scale set to another worker (over this worker's share, or its lease is another's)");
                }
                task.cancel.cancel();
            }
            keep || !task.handle.is_finished()
        });
        for (id, scale_set) in wanted {
            if running.contains_key(&id) {
                continue;
            }
            let child = cancel.child_token();
            // Not `name`: a JSON log writes the span's own name under that key too, and a
            // reader keeps only one of the two (issue 29).
            let span = tracing::info_span!(
                "scale_set",
                id = %id,
                scale_set = %scale_set.spec.name(),
                runner_group = %scale_set.spec.runner_group().name,
            );
            // Enabled: served. Disabled (so here only with instances left): drained. A change
            // of `enabled` changes the watched spec, which stops one task for the other.
            let handle = if scale_set.spec.enabled() {
                AbortOnDropHandle::new(tokio::spawn(
                    serve(self.shared.clone(), id, child.clone()).instrument(span),
                ))
            } else {
                AbortOnDropHandle::new(tokio::spawn(
                    drain(self.shared.clone(), id, child.clone()).instrument(span),
                ))
            };
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
}

/// What one tick read of the worker registry and the leases.
struct RegistryRead {
    live_workers: Vec<String>,
    draining: Vec<String>,
    held: Vec<(ScaleSetId, String)>,
}

/// The orphan sweeps of this control loop ([`crate::orphans`]): one at a time, in the
/// background (a slow provider or GitHub must not hold up the heartbeat and the leases), when
/// the planner says one is due.
struct Sweeps {
    started: tokio::time::Instant,
    last: Option<tokio::time::Instant>,
    running: Option<AbortOnDropHandle<()>>,
}

impl Sweeps {
    fn new() -> Self {
        Self {
            started: tokio::time::Instant::now(),
            last: None,
            running: None,
        }
    }

    fn tick(&mut self, shared: &Arc<Shared>, unensured: bool, hands_off: bool) {
        let now = tokio::time::Instant::now();
        let clock = SweepClock {
            since_start: now.duration_since(self.started),
            since_last: self.last.map(|last| now.duration_since(last)),
            interval: shared.settings.reconcile_interval,
        };
        let running = self.running.as_ref().is_some_and(|h| !h.is_finished());
        if !sweep_due(clock, unensured, running, hands_off) {
            return;
        }
        self.last = Some(now);
        let shared = shared.clone();
        let span = tracing::info_span!("orphan_sweep");
        self.running = Some(AbortOnDropHandle::new(tokio::spawn(
            async move {
                match crate::orphans::sweep(&shared).await {
                    Ok(swept) if swept != crate::orphans::Swept::default() => {
                        tracing::info!(
                            deleted = swept.deleted,
                            awaiting_jobs = swept.awaiting,
                            unproven_pools = swept.unproven,
                            "orphan sweep"
                        );
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(error = %chain(&error), "orphan sweep failed; again at the next one");
                    }
                }
            }
            .instrument(span),
        )));
    }
}

impl Controller {
    /// Sets the metrics from the store: the fleet-wide ones (exported only if `exports` says
    /// this worker leads) and the series of the scale sets `exports` names.
    async fn observe(&self, scale_sets: &[&ScaleSet], exports: &Exports<ScaleSetId>) {
        let metrics = &self.shared.metrics;
        metrics.set_fleet_exporter(exports.fleet);
        for state in ScaleSetState::ALL {
            let count = scale_sets.iter().filter(|s| s.state == *state).count();
            metrics
                .scale_sets
                .get_or_create(&StateLabel {
                    state: state.as_str().to_owned(),
                })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        // The store's one rule, as the status page, the API and the CLI count.
        let now = self.shared.clock.now();
        let attention = scale_sets
            .iter()
            .filter(|s| s.attention(now).is_some())
            .count();
        metrics
            .scale_sets_needing_attention
            .set(i64::try_from(attention).unwrap_or(i64::MAX));
        // One query for the whole fleet (a list per scale set was 1,000 reads a second at
        // 10,000 idle scale sets); the fleet totals are its sums.
        let Ok(counts) = self.shared.store.count_instances_by_scale_set().await else {
            return;
        };
        let mut by_status: HashMap<InstanceStatus, u64> = HashMap::new();
        let mut by_set: HashMap<ScaleSetId, Vec<(InstanceStatus, u64)>> = HashMap::new();
        for (id, status, n) in counts {
            *by_status.entry(status).or_default() += n;
            by_set.entry(id).or_default().push((status, n));
        }
        for status in InstanceStatus::ALL {
            let count = by_status.get(status).copied().unwrap_or(0);
            metrics
                .runners
                .get_or_create(&StatusLabel {
                    status: status.as_str().to_owned(),
                })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        // Entities are few: one read names them all.
        let Ok(entities) = self.shared.store.list_entities().await else {
            return;
        };
        // One copy of each entity's name for all its scale sets' series.
        let entities: HashMap<EntityId, (&'static str, Arc<str>)> = entities
            .into_iter()
            .map(|e| (e.id, (e.kind.kind_str(), Arc::from(e.kind.path()))))
            .collect();
        let now = self.shared.clock.now();
        let readings: Vec<SetReading> = scale_sets
            .iter()
            .filter(|s| exports.sets.contains(&s.id))
            .map(|s| SetReading {
                id: s.id,
                labels: {
                    // An entity gone between the two reads: its id stands for its name.
                    let (entity_kind, entity_name) = entities
                        .get(&s.entity_id)
                        .cloned()
                        .unwrap_or_else(|| ("unknown", Arc::from(s.entity_id.to_string())));
                    SetLabels {
                        scale_set: Arc::from(s.spec.name().as_str()),
                        entity_kind,
                        entity_name,
                    }
                },
                state: s.state,
                enabled: s.spec.enabled(),
                jobs_waiting: s.jobs_waiting,
                desired_runners: s.desired_runners,
                max_runners: s.spec.max_runners(),
                min_idle: s.spec.min_idle(),
                last_message_age: s.last_message_at.map(|at| {
                    now.to_system_time()
                        .duration_since(at.to_system_time())
                        .unwrap_or_default()
                }),
                runners: by_set.remove(&s.id).unwrap_or_default(),
            })
            .collect();
        metrics.observe_scale_sets(&readings);
    }
}
