//! The scaler: executes the planner's decisions and the message handler's retirements with the
//! client, the store and the provider.
//!
//! Order of a scale-up, each step durable before the next: a pending instance row (intent) →
//! JIT config (the GitHub runner id recorded) → `creating` → provider create with the pool key
//! → `running`; the runners one message asks for take each step together, one commit for all
//! of them ([`Runners::create_runners`]). [`Runners::recover`] finishes or undoes whatever a crash interrupted: a runner
//! whose instance was never created is removed from GitHub, an instance whose runner is gone is
//! deleted, so nothing is duplicated or orphaned.
//!
//! Every decision to remove or keep something is the reconcile planner's
//! ([`crate::planner::reconcile`]); this file looks things up, hands the answers in, and
//! carries out what comes back.

mod drain;
mod executor;
mod reconcile;
mod recovery;
mod superseded;

pub(crate) use executor::{At, execute};
pub(crate) use recovery::{Landed, Recovering};

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use scaleset_github::{Client, GithubScaleSetId, JitConfigRequest, RunnerDownload, RunnerId};
use scaleset_provider::{
    BootstrapInstance, CreateRequest, InstanceId, OsArch, OsType, Pool, Provider, ProviderInstance,
    ProxyConfig, RunnerTool, SecretString, UserDataOptions,
};
use scaleset_store::{
    Instance, InstanceAdvance, InstanceStatus, Lease, NewInstance, ReasonCode, ScaleSet,
    ScaleSetState,
};

use crate::checkpoint::Checkpoint;
use crate::ensure::record;
use crate::error::{Error, TemplateProblem, chain, store};
use crate::identity::runner_name;
use crate::planner::bootstrap_backoff::Shown;
use crate::planner::claim::{Answer, Asked, Recorded, Refused, judge};
use crate::planner::idle::{Listed, Poll, Row, Rules, next_due, reuse};
use crate::planner::provider_backoff::Attention;
use crate::planner::reconcile::{
    Bootstrap, Life, Limits, Retire, Served, bootstrap, deadline_due, job_waits, lifecycle,
    retires_completed,
};
use crate::planner::start::{unrecorded_runners, warm_pool};
use crate::planner::takeover::Inherited;
use crate::planner::{PlanInput, RunnerPhase, RunnerView, plan};
use crate::policies::Policies as _;
use crate::shared::Shared;
use crate::teardown::{self, Outcome, Teardown};

/// What an instance is given to reach the server's instance-facing endpoints.
struct InstanceAccessGrant {
    urls: scaleset_settings::InstanceUrls,
    token: SecretString,
}

/// The runners of one scale set, as one task serves them.
pub(crate) struct Runners<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) client: &'a Client,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) lease: &'a Lease,
    pub(crate) scale_set: &'a ScaleSet,
    pub(crate) github_id: GithubScaleSetId,
    pub(crate) pool: Pool,
    pub(crate) rng: fastrand::Rng,
    /// Runners seen online past their deadline in this pass: not asked about again.
    pub(crate) online: HashSet<String>,
    /// Whether the store may show a provider failure for this scale set (read at the task's
    /// start, set when this task records one): a create that works clears it only then.
    pub(crate) provider_error_shown: bool,
    /// When the last reconciliation ran (see `reconcile.rs`).
    pub(crate) last_reconciled: Option<tokio::time::Instant>,
    /// The desired count last written by this task (written again only when it changes: an
    /// idle fleet of 10,000 scale sets would otherwise write it 200 times a second).
    pub(crate) desired_written: Option<u32>,
    /// The desired count of the last plan. Display only: the listener writes it with the
    /// message cursor (or after an empty poll) in one commit, not before the creates, so a
    /// job waits for no write of it.
    pub(crate) desired: Option<u32>,
    /// The instances the last [`Runners::scale`] listed, when it changed none of them: the
    /// deadline check after it reads these instead of listing again (one list per empty poll,
    /// not two: 200 polls a second at 10,000 idle scale sets).
    pub(crate) listed: Option<Vec<Instance>>,
    /// `totalAssignedJobs` of the last statistics this task planned from (whether a job waits
    /// for an idle runner; unknown before the first plan).
    pub(crate) assigned: Option<i64>,
    /// GARM's pool and runner prefix, when this GitHub scale set was taken over from GARM
    /// ([`crate::planner::takeover::inherited`]).
    pub(crate) inherited: Option<Inherited>,
    /// The names this task touched while a recovery runs beside it (see `scaler/recovery.rs`).
    pub(crate) touched: Touched,
    /// The provider creates in flight (issue 35: a burst is bounded by the cloud, not by this
    /// task). At most the scale set's `max_runners`: each has a `creating` row the planner
    /// counts. Dropped with the task, which stops them as a crash would (recovery finishes
    /// or undoes their rows).
    pub(crate) creating: tokio::task::JoinSet<Created>,
    /// This task's writes to its scale set's instance rows so far, whatever the path (each
    /// goes through [`Runners::rows`]): a list stays true while the count has not moved.
    pub(crate) writes: std::sync::atomic::AtomicU64,
    /// The list the last empty poll that changed nothing judged, for the next empty polls to
    /// stand on while the idle planner ([`crate::planner::idle`]) allows.
    pub(crate) idle_list: Option<IdleList>,
}

/// An instance list an empty poll may stand on, and when ([`crate::planner::idle::Listed`]).
pub(crate) struct IdleList {
    pub(crate) rows: Vec<Instance>,
    pub(crate) listed: Listed,
}

/// A provider create that landed: the runner it is for and the provider's answer.
pub(crate) struct Created {
    name: String,
    runner_id: RunnerId,
    result: Result<ProviderInstance, scaleset_provider::Error>,
}

/// Landed creates judged by the claim planner: the accepted ones, and the refused ones with
/// why.
type Judged = (Vec<Created>, Vec<(Created, Refused)>);

/// What a task remembers while its recovery runs beside it (`None`: none runs): the runner
/// names it created, removed or saw finish a job (the recovery's facts about them are older
/// than the task's, and the start planner, [`crate::planner::start`], leaves them out), and
/// the runners GitHub had registered that the store did not know, counted as busy until the
/// facts land.
#[derive(Debug, Default)]
pub(crate) struct Touched(std::sync::Mutex<Option<Beside>>);

#[derive(Debug, Default)]
pub(crate) struct Beside {
    names: HashSet<String>,
    /// GitHub's registered runners of the scale set when the recovery began.
    registered: i64,
    /// The ones the store did not know (worked out at the first plan).
    unrecorded: Option<u32>,
}

impl Touched {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Beside>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A recovery begins, GitHub counting `registered` runners: names touched from now on are
    /// remembered.
    pub(crate) fn begin(&self, registered: i64) {
        *self.lock() = Some(Beside {
            registered,
            ..Beside::default()
        });
    }

    /// Remembers `name`, while a recovery runs.
    pub(crate) fn touch(&self, name: &str) {
        if let Some(beside) = self.lock().as_mut() {
            beside.names.insert(name.to_owned());
        }
    }

    /// Whether `name` was touched since the recovery began.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|beside| beside.names.contains(name))
    }

    /// Whether a recovery is running (its facts have not landed).
    pub(crate) fn recovering(&self) -> bool {
        self.lock().is_some()
    }

    /// The runners counted as busy for the store's not knowing them yet: at the first plan
    /// with `known` live rows, [`unrecorded_runners`]; less one per runner the store did not
    /// know that finished its job since; none once the facts landed.
    pub(crate) fn unrecorded(&self, known: u32) -> u32 {
        match self.lock().as_mut() {
            Some(beside) => *beside
                .unrecorded
                .get_or_insert_with(|| unrecorded_runners(beside.registered, known)),
            None => 0,
        }
    }

    /// A runner the store did not know finished its job.
    pub(crate) fn unrecorded_finished(&self) {
        if let Some(Beside {
            unrecorded: Some(n),
            ..
        }) = self.lock().as_mut()
        {
            *n = n.saturating_sub(1);
        }
    }

    /// The recovery has landed: the names touched, and no more remembering.
    pub(crate) fn finish(&self) -> HashSet<String> {
        self.lock().take().map(|b| b.names).unwrap_or_default()
    }
}

/// How long a runner has been idle at `now`: a `running` row was last written when it became
/// `running` (an ephemeral runner is never idle again after a job), so since then; zero for
/// any other status, or a clock that went back.
fn idle_for(instance: &Instance, now: scaleset_store::Timestamp) -> std::time::Duration {
    if instance.status != InstanceStatus::Running {
        return std::time::Duration::ZERO;
    }
    crate::planner::reconcile::elapsed(instance.updated_at, now)
}

fn phase(instance: &Instance) -> RunnerPhase {
    match instance.status {
        InstanceStatus::Pending | InstanceStatus::Creating => RunnerPhase::Pending,
        // An operator asked for it to go; a busy one finishes its job first.
        InstanceStatus::Running if instance.removal_requested_at.is_some() => RunnerPhase::Unwanted,
        InstanceStatus::Running => RunnerPhase::Idle,
        InstanceStatus::Busy => RunnerPhase::Busy,
        InstanceStatus::Deleting | InstanceStatus::Deleted | InstanceStatus::Failed => {
            RunnerPhase::Leaving
        }
    }
}

impl Runners<'_> {
    /// The scale set's name, as errors and checkpoints name it.
    pub(crate) fn name(&self) -> &str {
        self.scale_set.spec.name().as_str()
    }

    /// Wraps a failed GitHub call made `during` an operation as this scale set's error.
    pub(crate) fn github_error(
        &self,
        during: &'static str,
    ) -> impl FnOnce(scaleset_github::Error) -> Error {
        let scale_set = self.name().to_owned();
        move |source| Error::GitHub {
            scale_set,
            during,
            source,
        }
    }

    fn provider_error(
        &self,
        during: &'static str,
    ) -> impl FnOnce(scaleset_provider::Error) -> Error {
        let provider = self.scale_set.spec.provider().to_string();
        move |source| Error::Provider {
            provider,
            during,
            source,
        }
    }

    /// The store, for a write to this scale set's instance rows: counted (before it is tried,
    /// so a failed write counts too), so no list the idle planner stands on outlives a write.
    fn rows(&self) -> &dyn scaleset_store::Store {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &*self.shared.store
    }

    /// How many writes to the rows this task has made ([`Runners::rows`]).
    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the empty poll at `now`, the last statistics assigning `assigned` jobs, may
    /// stand on the last list instead of listing the rows and running the rules again
    /// ([`crate::planner::idle::reuse`]).
    pub(crate) fn may_stand(&self, now: scaleset_store::Timestamp, assigned: i64) -> bool {
        let poll = Poll {
            now,
            assigned,
            writes: self.writes(),
            beside: !self.creating.is_empty() || self.touched.recovering(),
            reconcile_due: self.reconcile_due(),
            removal_requested: self.shared.removal_requests.may_have(self.scale_set.id),
            max_age: self.shared.settings.instance_list_max_age,
        };
        reuse(self.idle_list.as_ref().map(|kept| &kept.listed), &poll)
    }

    /// Keeps `rows`, the list an empty poll's pass judged, for the next empty polls: only
    /// when the pass (begun at `listed_at`, after `writes` writes, planning from `assigned`
    /// jobs) asked for no runner (`requested`: one the provider's back-off held back wrote
    /// nothing), wrote nothing to the rows, and left no create or recovery running.
    pub(crate) fn keep_list(
        &mut self,
        rows: Vec<Instance>,
        listed_at: scaleset_store::Timestamp,
        writes: u64,
        assigned: i64,
        requested: u32,
    ) {
        self.idle_list = None;
        let quiet = requested == 0
            && self.writes() == writes
            && self.creating.is_empty()
            && !self.touched.recovering();
        if !quiet {
            return;
        }
        let spec = &self.scale_set.spec;
        let rules = Rules {
            listed_at,
            scale_down_delay: spec.scale_down_delay(),
            limits: Limits {
                max_idle_lifetime: spec.max_idle_lifetime(),
                max_lifetime: spec.max_lifetime(),
            },
            reports: self.shared.settings.instance_api_url.is_some(),
        };
        let due = next_due(
            rows.iter().map(|instance| Row {
                instance,
                seen_online: self.online.contains(&instance.name),
            }),
            &rules,
        );
        self.idle_list = Some(IdleList {
            rows,
            listed: Listed {
                at: listed_at,
                due,
                assigned,
                writes,
            },
        });
    }

    async fn instances(&self) -> Result<Vec<Instance>, Error> {
        self.shared
            .store
            .list_instances(self.scale_set.id)
            .await
            .map_err(store("listing instances"))
    }

    async fn transition(&self, name: &str, to: InstanceStatus) -> Result<(), Error> {
        self.rows()
            .transition_instance(self.lease, name, to)
            .await
            .map_err(store("moving an instance"))?;
        Ok(())
    }

    /// Plans and executes one scaling step from `assigned_jobs`.
    /// Returns how many runners it asked for.
    pub(crate) async fn scale(&mut self, assigned_jobs: i64) -> Result<u32, Error> {
        self.assigned = Some(assigned_jobs);
        let instances = self.instances().await?;
        let now = self.shared.clock.now();
        let mut views: Vec<RunnerView> = instances
            .iter()
            .map(|i| RunnerView {
                name: i.name.clone(),
                // A row of a superseded GitHub scale set cannot serve this one.
                phase: if self.is_current(i) {
                    phase(i)
                } else {
                    RunnerPhase::Leaving
                },
                idle_for: idle_for(i, now),
            })
            .collect();
        let live = views
            .iter()
            .filter(|v| {
                matches!(
                    v.phase,
                    RunnerPhase::Pending | RunnerPhase::Idle | RunnerPhase::Busy
                )
            })
            .count();
        let unrecorded = self
            .touched
            .unrecorded(u32::try_from(live).unwrap_or(u32::MAX));
        // Runners GitHub has that the store does not know yet (a lost database) may be
        // running the assigned jobs: counted as busy (never retired), so none is made twice.
        views.extend((0..unrecorded).map(|_| RunnerView {
            name: String::new(),
            phase: RunnerPhase::Busy,
            idle_for: std::time::Duration::ZERO,
        }));
        let idle = u32::try_from(
            views
                .iter()
                .filter(|v| v.phase == RunnerPhase::Idle)
                .count(),
        )
        .unwrap_or(u32::MAX);
        let spec = &self.scale_set.spec;
        let step = plan(&PlanInput {
            min_idle: warm_pool(spec.min_idle(), !self.touched.recovering(), idle),
            max_runners: spec.max_runners(),
            assigned_jobs,
            scale_down_delay: spec.scale_down_delay(),
            runners: &views,
        });
        if step.create > 0 || !step.retire.is_empty() {
            tracing::info!(
                desired = step.desired,
                create = step.create,
                retire = step.retire.len(),
                "scaling"
            );
        }
        self.desired = Some(step.desired);
        if step.create == 0 && step.retire.is_empty() {
            self.listed = Some(instances);
            return Ok(0);
        }
        self.listed = None;
        // A provider backing off is not asked again before its wait is over, nor a set whose
        // runners keep failing to boot.
        let created = if step.create > 0 && self.provider_may_call() && self.boots_may_create() {
            self.create_runners(step.create).await?
        } else {
            None
        };
        for name in &step.retire {
            if let Some(instance) = instances.iter().find(|i| &i.name == name) {
                // A runner that took a job meanwhile is marked busy and kept.
                self.remove_everywhere(instance).await?;
            }
        }
        // The list stays true when every create went through and nothing was retired: the
        // task is the only writer of its instances' rows under its lease, and the rows
        // returned are as stored. The deadline check after this reads it instead of listing
        // again (one list per message, not two).
        if let Some(created) = created.filter(|_| step.retire.is_empty()) {
            let mut instances = instances;
            for row in created {
                let at = instances.partition_point(|i| i.name < row.name);
                instances.insert(at, row);
            }
            self.listed = Some(instances);
        }
        Ok(step.create)
    }

    /// Creates `count` runners: intent, JIT config, provider instance, each step durable
    /// before the next (module documentation). The runners of one plan take each step
    /// together: their intents in one commit, their JIT configs asked at once, their GitHub
    /// ids with `creating` in one commit, then the provider creates, each started beside the
    /// listener ([`Runners::finish_create`] records it `running` when it lands). A message of
    /// N jobs costs 2 commits before its creates instead of 2N, and its last runner waits for
    /// no other runner's intent, JIT POST, commit or provider create (`docs/benchmarks.md`,
    /// issue 35: throughput and bursts). Returns the rows as stored (`creating`) when every
    /// runner's create was started, `None` when any was not (the caller lists again).
    async fn create_runners(&mut self, count: u32) -> Result<Option<Vec<Instance>>, Error> {
        let scale_set = self.scale_set;
        let spec = &scale_set.spec;
        // Before any intent: without its tools a GARM provider refuses the bootstrap.
        let tools = self.tools().await?;
        // Read before any intent is recorded: a set whose template cannot be read creates
        // nothing and shows why, as a set without its runner downloads does.
        let template = self.install_template().await?;
        let timeout = spec.bootstrap_timeout_or(self.shared.settings.default_bootstrap_timeout);
        let deadline = self.shared.clock.now().saturating_add(timeout);
        let pool_key = self.pool.key.as_str();
        let intents: Vec<NewInstance> = (0..count)
            .map(|_| {
                let name = runner_name(spec.runner_prefix(), &mut self.rng);
                self.touched.touch(&name);
                NewInstance::pending(name, pool_key, Some(deadline))
            })
            .collect();
        let intents = self
            .rows()
            .create_instances(self.lease, intents)
            .await
            .map_err(store("recording runners' intents"))?;
        for _ in &intents {
            self.shared
                .checkpoints
                .reached(Checkpoint::RunnerIntentRecorded, self.name())
                .await;
        }
        let requests: Vec<JitConfigRequest> = intents
            .iter()
            .map(|i| JitConfigRequest::new(&i.name))
            .collect();
        let answers = self.generate_jit_configs(&requests).await;
        let mut failure = None;
        let mut jits = Vec::with_capacity(intents.len());
        for (intent, answer) in intents.iter().zip(answers) {
            match answer {
                Ok(jit) => jits.push((intent.name.clone(), jit)),
                Err(e) => {
                    // A committed-then-failed POST leaves a runner by this name: remove it with
                    // the intent, so the next step starts clean.
                    self.remove_everywhere(intent).await?;
                    failure.get_or_insert(self.github_error("generating a JIT config")(e));
                }
            }
        }
        // The GitHub ids and `creating` in one commit (recovery handles a `creating` row with
        // or without a provider instance; a `pending` row never has a runner id now).
        let moves = jits
            .iter()
            .map(|(name, jit)| InstanceAdvance {
                name: name.clone(),
                to: InstanceStatus::Creating,
                provider_id: None,
                github_runner_id: Some(i64::from(jit.runner.id)),
            })
            .collect();
        let creating = self
            .rows()
            .advance_instances(self.lease, moves)
            .await
            .map_err(store("recording runners' GitHub ids"))?;
        for _ in &creating {
            self.shared
                .checkpoints
                .reached(Checkpoint::JitConfigGenerated, self.name())
                .await;
        }
        let all_started = failure.is_none();
        for (row, (_, jit)) in creating.iter().zip(&jits) {
            // After a failed JIT POST with the provider backing off, the runners not asked yet
            // are removed as a failed create's is (GitHub first; the row stays `deleting`
            // until the provider may be asked again).
            if !all_started && !self.provider_may_call() {
                self.remove_everywhere(row).await?;
                continue;
            }
            self.launch(row, jit, timeout, &tools, template.as_deref())
                .await?;
        }
        if let Some(error) = failure {
            return Err(error);
        }
        Ok(Some(creating))
    }

    /// Starts the provider's create of the instance of `row` (recorded `creating` with its
    /// runner's GitHub id) beside the listener: a cloud takes 30–90 s, so the listener keeps
    /// polling and starts the next job's create meanwhile, and finishes this one when it
    /// lands ([`Runners::finish_create`]). The `creating` row counts as a runner to the
    /// planner, so nothing is asked for twice.
    async fn launch(
        &mut self,
        row: &Instance,
        jit: &scaleset_github::JitConfig,
        timeout: std::time::Duration,
        tools: &[RunnerDownload],
        template: Option<&str>,
    ) -> Result<(), Error> {
        let name = row.name.clone();
        let access = self
            .grant_access(&name, &jit.encoded_jit_config, timeout)
            .await?;
        let request = CreateRequest {
            bootstrap: self.bootstrap(&name, access, tools, template),
            jit_config: Some(jit.encoded_jit_config.clone()),
            // GARM bounds a create by the bootstrap timeout; so does the external provider.
            bootstrap_timeout: Some(timeout),
        };
        let runner_id = jit.runner.id;
        let provider = Arc::clone(&self.provider);
        let pool = self.pool.clone();
        let id = instance_id_of(&name)?;
        let call = async move {
            let result = match provider.create(&request).await {
                Ok(created) => Ok(created),
                // A lost response may hide a created instance: look before giving up.
                Err(e) => provider.get(&pool, &id).await.map_err(|_| e),
            };
            Created {
                name,
                runner_id,
                result,
            }
        };
        self.creating
            .spawn(tracing::Instrument::in_current_span(call));
        Ok(())
    }

    /// The next create in flight to land, or `None` when none is in flight. A create task
    /// that panicked is skipped: its row stays `creating` and the next recovery asks the
    /// provider about it.
    pub(crate) async fn next_created(&mut self) -> Option<Created> {
        loop {
            match self.creating.join_next().await? {
                Ok(created) => return Some(created),
                Err(e) => {
                    tracing::error!(error = %e, "a provider create task failed; recovery looks at its instance");
                }
            }
        }
    }

    /// `first` (when given) and every other create that has landed by now, without waiting for
    /// the rest.
    fn landed_with(&mut self, first: Option<Created>) -> Vec<Created> {
        let mut landed: Vec<Created> = first.into_iter().collect();
        while let Some(next) = self.creating.try_join_next() {
            match next {
                Ok(created) => landed.push(created),
                Err(e) => {
                    tracing::error!(error = %e, "a provider create task failed; recovery looks at its instance");
                }
            }
        }
        landed
    }

    /// Finishes `first`, a create that landed, with every other that has landed by now
    /// ([`Runners::finish_creates`]: one commit for them all).
    pub(crate) async fn finish_landed_with(&mut self, first: Created) -> Result<(), Error> {
        let landed = self.landed_with(Some(first));
        self.finish_creates(landed).await
    }

    /// Finishes the creates that have landed, without waiting for the others: called before a
    /// message or an empty poll is handled, so what it says of a runner meets its row as the
    /// provider left it.
    pub(crate) async fn finish_landed(&mut self) -> Result<(), Error> {
        let landed = self.landed_with(None);
        self.finish_creates(landed).await
    }

    /// Waits for every create in flight and finishes each (the listener ends without a stop:
    /// what it started is recorded, not abandoned).
    pub(crate) async fn finish_in_flight(&mut self) -> Result<(), Error> {
        while let Some(created) = self.next_created().await {
            self.finish_landed_with(created).await?;
        }
        Ok(())
    }

    /// Records the creates in `landed`: the ones that worked `running` with their provider ids
    /// in one commit (issue 35 item 4: a commit per runner was most of the store's work per
    /// job once the creates ran beside the listener), each failed one as
    /// [`Runners::finish_create`] does. When that commit is refused (a row removed while its
    /// create was in flight: the batch writes all or none), each is finished on its own, as
    /// before, so the missing one's instance is deleted and the others recorded.
    pub(crate) async fn finish_creates(&mut self, landed: Vec<Created>) -> Result<(), Error> {
        let (worked, failed): (Vec<Created>, Vec<Created>) =
            landed.into_iter().partition(|c| c.result.is_ok());
        // A provider's answer is a claim: only the ones the claim planner accepts are
        // recorded; the refused ones are removed as a failed create's runner is.
        let (worked, refused) = self.judge_answers(worked).await?;
        // The failures after the successes: a batch with both leaves the failure shown and
        // counted by the back-off, as the last word on the provider.
        self.record_running(worked).await?;
        // Removed first, the back-off fed after: the removals delete by name, and a back-off
        // started by the first refusal must not leave the others' instances running.
        let mut refusals = Vec::with_capacity(refused.len());
        for (created, refused) in refused {
            refusals.push(self.refuse_answer(created, refused).await?);
        }
        for refusal in &refusals {
            self.provider_failed(refusal).await?;
        }
        for created in failed {
            self.finish_create(created).await?;
        }
        Ok(())
    }

    /// Judges each answer in `worked` ([`crate::planner::claim::judge`]) against the rows of
    /// every scale set that claim its provider id, the other answers of the batch, and the ids
    /// refused before: the accepted ones, and the refused ones with why.
    async fn judge_answers(&self, worked: Vec<Created>) -> Result<Judged, Error> {
        let mut claims = Vec::with_capacity(worked.len());
        for created in &worked {
            let rows = match &created.result {
                Ok(instance) => self
                    .shared
                    .store
                    .instances_claiming(&instance.provider_id)
                    .await
                    .map_err(store("looking up the rows claiming a provider id"))?,
                Err(_) => Vec::new(),
            };
            claims.push(rows);
        }
        let verdicts: Vec<Result<(), Refused>> = worked
            .iter()
            .zip(&claims)
            .map(|(created, rows)| {
                let Ok(instance) = &created.result else {
                    return Ok(());
                };
                let batch = worked.iter().filter_map(|other| {
                    let answered = other.result.as_ref().ok()?;
                    (other.name != created.name).then_some(Recorded {
                        name: &other.name,
                        provider_id: Some(&answered.provider_id),
                    })
                });
                let recorded: Vec<Recorded<'_>> = rows
                    .iter()
                    .map(|row| Recorded {
                        name: &row.name,
                        provider_id: row.provider_id.as_deref(),
                    })
                    .chain(batch)
                    .collect();
                let asked = Asked {
                    name: &created.name,
                    pool_key: self.pool.key.as_str(),
                };
                let answer = Answer {
                    name: &instance.name,
                    provider_id: &instance.provider_id,
                    pool_id: instance.pool_id.as_deref(),
                };
                self.shared
                    .refused_ids
                    .with(|refused| judge(&asked, &answer, &recorded, refused))
            })
            .collect();
        let mut accepted = Vec::with_capacity(worked.len());
        let mut refused = Vec::new();
        for (created, verdict) in worked.into_iter().zip(verdicts) {
            match verdict {
                Ok(()) => accepted.push(created),
                Err(why) => refused.push((created, why)),
            }
        }
        Ok((accepted, refused))
    }

    /// Refuses a create's answer the claim planner refused: the answer is not recorded, its
    /// provider id is remembered as refused, rows of this scale set recorded with that id are
    /// deleted by their names from now on, the provider is shown failing with the reason (an
    /// event and the scale set's provider error; the returned error is for the back-off), and
    /// the runner is removed as a failed create's is: its instance deleted by the name we asked
    /// for, never by the id.
    async fn refuse_answer(&mut self, created: Created, refused: Refused) -> Result<Error, Error> {
        let Created { name, result, .. } = created;
        if let Ok(answer) = &result {
            self.shared.refused_ids.insert(&answer.provider_id);
        }
        for other in &refused.disowns {
            // A row of another scale set is not ours to write (its task's deletes look up
            // who claims an id before sending it: [`crate::teardown`]).
            match self
                .rows()
                .set_instance_ids(self.lease, other, Some(other), None)
                .await
            {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(store("disowning a disputed provider id")(e)),
            }
        }
        let provider = self.scale_set.spec.provider().to_string();
        let reason = format!(
            "provider {provider:?} answered the create of runner {name:?} with an instance that \
             is not provably ours: {}; the answer is not recorded and nothing is deleted by its \
             id; check the provider",
            refused.reason
        );
        tracing::error!(runner = %name, code = refused.reason.code(), %reason, "provider answer refused");
        let metrics = &self.shared.metrics;
        metrics.count(&metrics.bootstrap_failures, self.scale_set.id);
        self.shared
            .store
            .append_event(
                self.scale_set.id,
                ReasonCode::ProviderAnswerRefused,
                &reason,
            )
            .await
            .map_err(store("appending an event"))?;
        let error = Error::ProviderAnswerRefused {
            provider,
            runner: name.clone(),
            code: refused.reason.code(),
            reason: refused.reason.to_string(),
        };
        self.shared
            .store
            .set_provider_error(self.lease, Some(&reason))
            .await
            .map_err(store("recording the provider's failure"))?;
        self.provider_error_shown = true;
        match self.shared.store.get_instance(&name).await {
            Ok(instance) => self.remove_everywhere(&instance).await?,
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(store("reading an instance")(e)),
        }
        Ok(error)
    }

    /// Records the creates in `worked` (each one that worked) `running` in one commit.
    async fn record_running(&mut self, worked: Vec<Created>) -> Result<(), Error> {
        if worked.len() < 2 {
            for created in worked {
                self.finish_create(created).await?;
            }
            return Ok(());
        }
        let moves = worked
            .iter()
            .filter_map(|c| {
                c.result.as_ref().ok().map(|instance| InstanceAdvance {
                    name: c.name.clone(),
                    to: InstanceStatus::Running,
                    provider_id: Some(instance.provider_id.clone()),
                    github_runner_id: None,
                })
            })
            .collect();
        let recorded = self.rows().advance_instances(self.lease, moves).await;
        if let Err(e) = recorded {
            tracing::debug!(error = %e, count = worked.len(), "recording landed creates together was refused; recording each");
            for created in worked {
                self.finish_create(created).await?;
            }
            return Ok(());
        }
        self.clear_provider_error().await?;
        for created in worked {
            self.provider_succeeded().await?;
            if let Ok(instance) = &created.result {
                tracing::info!(runner = %created.name, runner_id = created.runner_id.0, provider_id = %instance.provider_id, "runner created");
            }
            self.shared
                .checkpoints
                .reached(Checkpoint::InstanceCreated, self.name())
                .await;
        }
        Ok(())
    }

    /// A create that worked ends a run of provider failures; written only when one is shown
    /// (a write per job otherwise, `docs/benchmarks.md`).
    async fn clear_provider_error(&mut self) -> Result<(), Error> {
        if self.provider_error_shown {
            self.shared
                .store
                .set_provider_error(self.lease, None)
                .await
                .map_err(store("clearing the provider's failure"))?;
            self.provider_error_shown = false;
        }
        Ok(())
    }

    /// Records what the provider answered to a create: the instance `running`, or the runner
    /// removed from GitHub with its row and the failure fed to the provider's back-off (the
    /// failure is contained: the scale set is flagged once it keeps failing, the task keeps
    /// listening).
    pub(crate) async fn finish_create(&mut self, created: Created) -> Result<(), Error> {
        let Created {
            name,
            runner_id,
            result,
        } = created;
        let created = match result {
            Ok(created) => created,
            Err(e) => {
                let metrics = &self.shared.metrics;
                metrics.count(&metrics.bootstrap_failures, self.scale_set.id);
                tracing::warn!(runner = %name, error = %chain(&e), "instance create failed; removing the runner from GitHub");
                // The provider's own words, for the status page's "provider failing".
                let said = chain(&e).to_string();
                self.provider_failed(&self.provider_error("creating an instance")(e))
                    .await?;
                let instance = self
                    .shared
                    .store
                    .get_instance(&name)
                    .await
                    .map_err(store("reading an instance"))?;
                self.shared
                    .store
                    .set_provider_error(self.lease, Some(&said))
                    .await
                    .map_err(store("recording the provider's failure"))?;
                self.provider_error_shown = true;
                return self.remove_everywhere(&instance).await;
            }
        };
        let advance = |to| {
            self.rows()
                .advance_instance(self.lease, &name, to, Some(&created.provider_id), None)
        };
        let recorded = match advance(InstanceStatus::Running).await {
            // Its runner took its job before the create landed ([`Runners::started`]): it
            // stays busy, with its provider id.
            Err(scaleset_store::Error::InvalidTransition {
                from: InstanceStatus::Busy,
                ..
            }) => advance(InstanceStatus::Busy).await,
            other => other,
        };
        match recorded {
            Ok(_) => {}
            // Its runner finished (or was removed) while the create was in flight, and its
            // row went with it: the machine is ours (our pool key) and nothing will use it.
            Err(e) if e.is_not_found() => {
                tracing::info!(runner = %name, "runner removed while its instance was created; deleting the instance");
                let core = Teardown::unrecorded(
                    name.clone(),
                    created.provider_id.clone(),
                    self.pool.key.as_str(),
                    self.ours(),
                    std::time::Instant::now(),
                );
                if let Some(e) = self.execute_teardown(core).await?.failed {
                    // The reconciliation deletes an instance without a runner or a row.
                    tracing::warn!(runner = %name, error = %chain(&e), "could not delete the instance of a removed runner; the reconciliation will");
                }
                return Ok(());
            }
            Err(e) => return Err(store("recording the provider id")(e)),
        }
        self.clear_provider_error().await?;
        self.provider_succeeded().await?;
        tracing::info!(runner = %name, runner_id = runner_id.0, provider_id = %created.provider_id, "runner created");
        self.shared
            .checkpoints
            .reached(Checkpoint::InstanceCreated, self.name())
            .await;
        Ok(())
    }

    /// Grants the runner's instance its token and keeps its JIT config for it to fetch, when
    /// instances have a server to reach ([`crate::Settings::instance_api_url`]). The token
    /// lasts as long as the bootstrap may (GARM's instance JWT does the same).
    async fn grant_access(
        &self,
        name: &str,
        jit_config: &SecretString,
        bootstrap_timeout: std::time::Duration,
    ) -> Result<Option<InstanceAccessGrant>, Error> {
        let Some(urls) = self.shared.settings.instance_urls() else {
            return Ok(None);
        };
        let token = self
            .rows()
            .grant_instance_access(self.lease, name, jit_config, bootstrap_timeout)
            .await
            .map_err(store("granting an instance its token"))?;
        Ok(Some(InstanceAccessGrant { urls, token }))
    }

    /// The scale set's runner install template, base64-encoded as GARM sends it in
    /// `extra_specs.runner_install_template` (a Go `[]byte`), or `None` when the set names
    /// none. The file is sent as it is: garm-provider-common renders it as a Go template with
    /// the instance's own values (`{{ .DownloadURL }}`, `{{ .MetadataURL }}`,
    /// `{{ .CallbackToken }}`, …) in place of its built-in script, so nothing is rendered here.
    async fn install_template(&self) -> Result<Option<String>, Error> {
        let Some(name) = &self.scale_set.spec.runner_setup().runner_install_template else {
            return Ok(None);
        };
        let refused = |problem: TemplateProblem| Error::InstallTemplate {
            scale_set: self.scale_set.spec.name().to_string(),
            template: name.clone(),
            problem,
        };
        let Some(path) = self.shared.settings.runner_install_templates.get(name) else {
            return Err(refused(TemplateProblem::NotConfigured));
        };
        let bytes = tokio::fs::read(path).await.map_err(|source| {
            refused(TemplateProblem::Unreadable {
                path: path.clone(),
                source,
            })
        })?;
        use base64::Engine as _;
        Ok(Some(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ))
    }

    /// The runner downloads of the scale set's entity (GARM's `tools`), read once per entity
    /// per refresh ([`crate::runner_tools`]).
    async fn tools(&self) -> Result<Arc<[RunnerDownload]>, Error> {
        // Boxed as a `dyn Future`: the listener's future is deep enough already for the
        // compiler's `Send` check to overflow with this one inlined.
        let read: std::pin::Pin<Box<dyn Future<Output = _> + Send + '_>> = Box::pin(
            self.shared
                .runner_tools
                .of(self.scale_set.entity_id, self.client, &*self.shared.store),
        );
        read.await.map_err(|source| Error::RunnerTools {
            scale_set: self.name().to_owned(),
            source,
        })
    }

    /// GARM's bootstrap parameters for runner `name`: `tools` is the entity's whole list of
    /// runner downloads (the provider picks the one for the instance's OS and architecture).
    fn bootstrap(
        &self,
        name: &str,
        access: Option<InstanceAccessGrant>,
        tools: &[RunnerDownload],
        template: Option<&str>,
    ) -> BootstrapInstance {
        let spec = &self.scale_set.spec;
        let mut extra_specs = spec.extra_specs().clone();
        if let (Some(template), serde_json::Value::Object(specs)) = (template, &mut extra_specs) {
            specs.insert(
                "runner_install_template".to_owned(),
                serde_json::Value::String(template.to_owned()),
            );
        }
        let (callback_url, metadata_url, instance_token) = match access {
            Some(grant) => (grant.urls.callback, grant.urls.metadata, grant.token),
            None => (String::new(), String::new(), SecretString::from("")),
        };
        BootstrapInstance {
            name: name.to_owned(),
            tools: tools.iter().map(runner_tool).collect(),
            repo_url: self.client.config_url().as_str().to_owned(),
            callback_url,
            metadata_url,
            instance_token,
            ssh_keys: spec.runner_setup().ssh_keys.clone(),
            extra_specs: (!extra_specs.is_null()).then_some(extra_specs),
            github_runner_group: spec.runner_group().name.clone(),
            // The endpoint's own bundle, as GARM sends it: a runner of a GHES with a private CA
            // must trust what we trust to reach it.
            ca_cert_bundle: self.client.ca_bundle_pem().map(<[u8]>::to_vec),
            arch: match spec.os_arch() {
                scaleset_store::OsArch::Amd64 => OsArch::Amd64,
                scaleset_store::OsArch::Arm64 => OsArch::Arm64,
                scaleset_store::OsArch::Arm => OsArch::Arm,
                scaleset_store::OsArch::I386 => OsArch::I386,
            },
            os_type: match spec.os_type() {
                scaleset_store::OsType::Linux => OsType::Linux,
                scaleset_store::OsType::Windows => OsType::Windows,
                scaleset_store::OsType::Osx => OsType::Osx,
            },
            flavor: spec.flavor().to_owned(),
            image: spec.image().to_owned(),
            labels: spec.label_texts(),
            pool_id: self.pool.key.clone(),
            user_data_options: UserDataOptions {
                disable_updates_on_boot: spec.runner_setup().disable_updates_on_boot,
                extra_packages: spec.runner_setup().extra_packages.clone(),
                enable_boot_debug: spec.runner_setup().enable_boot_debug,
            },
            jit_config_enabled: true,
            // The scale set's proxy for its runners (GARM #822), never the worker's own.
            proxy_config: Some(ProxyConfig {
                http_proxy: spec.runner_setup().http_proxy.clone(),
                https_proxy: spec.runner_setup().https_proxy.clone(),
                no_proxy: spec.runner_setup().no_proxy.clone(),
            }),
        }
    }

    /// Marks the runner busy (a `JobStarted` named it); `online_at` (when GitHub assigned it
    /// the job) ends its boot in the metrics. A job start is a fact whatever the row's state:
    /// a runner made for a job takes it at once, often before its provider create has landed
    /// (the row still `creating`); it is marked busy then, and the create's landing keeps it
    /// so ([`Runners::finish_create`]).
    pub(crate) async fn started(&self, runner: &str, online_at: SystemTime) -> Result<(), Error> {
        match self.shared.store.get_instance(runner).await {
            Ok(i)
                if i.scale_set_id == self.scale_set.id
                    && matches!(i.status, InstanceStatus::Running | InstanceStatus::Creating) =>
            {
                self.boot_online(runner).await?;
                if let Ok(boot) = online_at.duration_since(i.created_at.to_system_time()) {
                    let metrics = &self.shared.metrics;
                    metrics.observe_timing(
                        &metrics.runner_requested_to_online,
                        self.scale_set.id,
                        boot.as_secs_f64(),
                    );
                }
                self.transition(runner, InstanceStatus::Busy).await
            }
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(store("reading an instance")(e)),
        }
    }

    /// Retires the runner a `JobCompleted` named (ephemeral: it is done).
    pub(crate) async fn completed(&self, runner: &str) -> Result<(), Error> {
        // Also a runner the store does not know yet: the recovery must not record it as busy.
        self.touched.touch(runner);
        match self.shared.store.get_instance(runner).await {
            Ok(i) if retires_completed(&i, self.scale_set.id) => self.remove_everywhere(&i).await,
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => {
                self.touched.unrecorded_finished();
                Ok(())
            }
            Err(e) => Err(store("reading an instance")(e)),
        }
    }

    /// Removes runners that did not come online by their bootstrap deadline (and reconciles
    /// when due, retries deletions, retires runners for their life). Returns the rows it
    /// judged, as listed, less the ones it removed for their deadline.
    pub(crate) async fn check_deadlines(&mut self) -> Result<Vec<Instance>, Error> {
        let listed = self.listed.take();
        let listed = match self.reconcile_if_due().await? {
            false => listed,
            // Reconciliation may have changed the instances.
            true => None,
        };
        let instances = match listed {
            Some(instances) => instances,
            None => self.instances().await?,
        };
        // Deletions left by failed creates wait while creates are in flight: the back-off
        // judges the creates first (a delete that works in between would end a run of create
        // failures, and a provider whose creates all fail would never be flagged).
        if self.creating.is_empty() {
            self.retry_deletions(&instances).await?;
        }
        let now = self.shared.clock.now();
        let mut removed = HashSet::new();
        for instance in instances.iter().cloned() {
            let seen = self.online.contains(&instance.name);
            if !deadline_due(&instance, self.is_current(&instance), now, seen) {
                continue;
            }
            let runner = match instance.github_runner_id {
                Some(runner) => {
                    let result =
                        again_on_token(|| self.client.get_runner(RunnerId::from(runner))).await;
                    result.map_err(self.github_error("reading a runner"))?
                }
                None => None,
            };
            match bootstrap(runner.as_ref()) {
                Bootstrap::Online => {
                    self.online.insert(instance.name.clone());
                    self.boot_online(&instance.name).await?;
                }
                Bootstrap::Late => {
                    let metrics = &self.shared.metrics;
                    metrics.count(&metrics.bootstrap_deadline_expiries, self.scale_set.id);
                    tracing::warn!(runner = %instance.name, "runner not online by its bootstrap deadline; removing it");
                    self.shared
                        .store
                        .append_event(
                            self.scale_set.id,
                            ReasonCode::BootstrapTimeout,
                            &format!(
                                "runner {} was not online by its bootstrap deadline; removed",
                                instance.name
                            ),
                        )
                        .await
                        .map_err(store("appending an event"))?;
                    self.remove_everywhere(&instance).await?;
                    self.boot_failed(&instance.name, "was not online by its bootstrap deadline")
                        .await?;
                    removed.insert(instance.name.clone());
                }
            }
        }
        let left: Vec<Instance> = instances
            .into_iter()
            .filter(|i| !removed.contains(&i.name))
            .collect();
        self.retire_for_life(&left, None, None).await?;
        Ok(left)
    }

    /// Retires the rows [`lifecycle`] says are done, from `instances`, GitHub's runner list
    /// and the provider's list when this pass read them. Whether an instance reported a failed
    /// bootstrap is read here, for rows still booting, when instances report at all.
    pub(crate) async fn retire_for_life(
        &mut self,
        instances: &[Instance],
        runners: Option<&[scaleset_github::RunnerReference]>,
        at_provider: Option<&[scaleset_provider::ProviderInstance]>,
    ) -> Result<(), Error> {
        let spec = &self.scale_set.spec;
        let prefix = format!("{}-", spec.runner_prefix());
        let busy = instances
            .iter()
            .filter(|i| i.status == InstanceStatus::Busy)
            .count();
        let served = Served {
            pool_key: self.pool.key.as_str(),
            prefix: &prefix,
            now: self.shared.clock.now(),
            limits: Limits {
                max_idle_lifetime: spec.max_idle_lifetime(),
                max_lifetime: spec.max_lifetime(),
            },
            job_waits: job_waits(self.assigned, busy),
            inherited: self.inherited.as_ref().map(|garm| garm.pool.key.as_str()),
        };
        let reports = self.shared.settings.instance_urls().is_some();
        let mut retire = Vec::new();
        // The instances that reported a failed bootstrap, with what each said.
        let mut failed_reports: Vec<(String, String)> = Vec::new();
        for instance in instances {
            let runner = runners.and_then(|list| {
                list.iter().find(|r| {
                    instance.github_runner_id == Some(i64::from(r.id)) && r.name == instance.name
                })
            });
            let listed = at_provider.and_then(|list| {
                list.iter()
                    .find(|i| i.name == instance.name)
                    .map(|i| i.status)
            });
            let booting = reports
                && instance.status == InstanceStatus::Running
                && !self.online.contains(&instance.name);
            let report = match booting {
                true => self
                    .shared
                    .store
                    .get_instance_access(&instance.name)
                    .await
                    .map_err(store("reading an instance's bootstrap report"))?,
                false => None,
            };
            let status = report.as_ref().map(|a| a.bootstrap_status);
            if status == Some(scaleset_store::BootstrapStatus::Idle) {
                self.boot_online(&instance.name).await?;
            }
            let bootstrap_failed = status == Some(scaleset_store::BootstrapStatus::Failed);
            if bootstrap_failed {
                let said = report.and_then(|a| a.status_message).unwrap_or_default();
                failed_reports.push((instance.name.clone(), said));
            }
            let life = Life {
                instance,
                runner,
                at_provider: listed,
                bootstrap_failed,
            };
            if let Some(why) = lifecycle(&life, &served) {
                retire.push((instance, why));
            }
        }
        for (instance, why) in retire {
            self.retire(instance, why).await?;
            if why == Retire::BootstrapFailed {
                let metrics = &self.shared.metrics;
                metrics.count(&metrics.bootstrap_failures, self.scale_set.id);
                let said = failed_reports
                    .iter()
                    .find(|(name, _)| *name == instance.name)
                    .map_or("", |(_, said)| said.as_str());
                let why = if said.is_empty() {
                    "reported a failed bootstrap".to_owned()
                } else {
                    format!("reported a failed bootstrap: {said:?}")
                };
                self.boot_failed(&instance.name, &why).await?;
            }
        }
        Ok(())
    }

    async fn retire(&self, instance: &Instance, why: Retire) -> Result<(), Error> {
        tracing::warn!(runner = %instance.name, reason = why.reason(), "retiring a runner");
        self.shared
            .store
            .append_event(
                self.scale_set.id,
                why.code(),
                &format!("runner {}: {}; removed", instance.name, why.reason()),
            )
            .await
            .map_err(store("appending an event"))?;
        // A runner that took a job meanwhile is marked busy and kept (GitHub refuses).
        self.remove_everywhere(instance).await
    }

    /// Removes a runner from GitHub (a busy one stays, marked busy), its instance from the
    /// provider, and its row from the store: the teardown core ([`Teardown`]) decides each
    /// step and [`Runners::execute_teardown`] carries it out.
    async fn remove_everywhere(&self, instance: &Instance) -> Result<(), Error> {
        self.touched.touch(&instance.name);
        let row = teardown::Row {
            name: instance.name.clone(),
            status: instance.status,
            runner_id: instance.github_runner_id.map(RunnerId::from),
            provider_id: instance.provider_id.clone(),
            pool_key: instance.pool_key.clone(),
        };
        let health = self.shared.provider_health.get(self.scale_set.id);
        let core = Teardown::new(row, self.ours(), health, std::time::Instant::now());
        let ran = self.execute_teardown(core).await?;
        match ran.outcome {
            Outcome::Removed => tracing::info!(runner = %instance.name, "runner removed"),
            Outcome::NotOurs => {
                tracing::warn!(runner = %instance.name, pool_key = %instance.pool_key, "row of a pool key not ours: not torn down");
            }
            // Tried again by `retry_deletions` once the back-off allows.
            Outcome::Deferred => {
                tracing::debug!(runner = %instance.name, retry_at = ?ran.wake, "instance delete deferred; kept as deleting");
            }
            Outcome::Unconfirmed => {
                tracing::warn!(runner = %instance.name, "GitHub answered the runner's look-up with another runner; not torn down, asked again later");
            }
            Outcome::Kept | Outcome::AlreadyGone => {}
        }
        Ok(())
    }

    /// What the served scale set owns, as the teardown core checks it.
    pub(crate) fn ours(&self) -> teardown::Ours {
        teardown::Ours {
            scale_set: self.github_id,
            pool_key: self.pool.key.as_str().to_owned(),
            inherited_pool_key: self
                .inherited
                .as_ref()
                .map(|garm| garm.pool.key.as_str().to_owned()),
        }
    }
}

/// How a scale set's state reason backing off for failed bootstraps begins: the reason is
/// cleared when a runner comes online only if it still says this.
const BOOT_BACKOFF: &str = "runners fail to boot";

impl Runners<'_> {
    /// Whether runners may be created now: the set is not waiting after failed bootstraps
    /// ([`crate::planner::bootstrap_backoff`]).
    pub(crate) fn boots_may_create(&self) -> bool {
        self.shared
            .boots
            .get(self.scale_set.id)
            .may_create(self.shared.clock.now())
    }

    /// Feeds a failed bootstrap of `runner` (`why`: what it did) to the bootstrap back-off
    /// planner, and shows on the scale set that its creates wait, why, and what to do.
    async fn boot_failed(&self, runner: &str, why: &str) -> Result<(), Error> {
        let policy = self.shared.settings.bootstrap_backoff();
        let boots = self.shared.boots.get(self.scale_set.id);
        let (next, shown) = boots.failed(&policy, self.shared.clock.now(), fastrand::f64());
        self.shared.boots.set(self.scale_set.id, next);
        let Shown::BackingOff { failures, retry_in } = shown else {
            return Ok(());
        };
        let reason = format!(
            "{BOOT_BACKOFF}: {failures} bootstrap(s) failed in a row, the last runner {runner} \
             {why}; no runner is created before the next try in {}s (the wait doubles per \
             round of failures, up to {}s, until a runner of the set comes online); check the \
             image, the runner install template, the runner downloads and the instance's network \
             (the install log on the instance says where it stopped), then `scalesetctl \
             scale-set retry` to try at once",
            retry_in.as_secs(),
            policy.max.as_secs()
        );
        tracing::warn!(%reason, "bootstraps failing; creates back off");
        record(
            self.shared,
            self.lease,
            ReasonCode::BootstrapBackoff,
            &reason,
            |s| {
                if matches!(s.state, ScaleSetState::Ready | ScaleSetState::Pending) {
                    s.state = ScaleSetState::Error;
                }
            },
        )
        .await?;
        Ok(())
    }

    /// A runner of the scale set came online (`runner`): the bootstrap back-off ends and the
    /// count starts again; the scale set is shown ready again when its failing boots were
    /// what it showed.
    async fn boot_online(&self, runner: &str) -> Result<(), Error> {
        let boots = self.shared.boots.get(self.scale_set.id);
        let (next, shown) = boots.online();
        if let Shown::Recovered { failures } = shown {
            self.shared.boots.set(self.scale_set.id, next);
            let reason = format!(
                "runner {runner} came online after {failures} failed bootstrap(s) in a row; \
                 runners are created again"
            );
            tracing::info!(%reason, "bootstraps work again");
            self.shared
                .store
                .modify_leased_scale_set_with_event(
                    self.lease,
                    &mut |s| {
                        if s.state == ScaleSetState::Error
                            && s.state_reason.starts_with(BOOT_BACKOFF)
                        {
                            s.state = ScaleSetState::Ready;
                            s.state_reason = reason.clone();
                        }
                    },
                    ReasonCode::BootstrapRecovered,
                    &reason,
                )
                .await
                .map_err(store("recording that bootstraps work again"))?;
        }
        Ok(())
    }

    /// Whether the provider may be asked to create or delete now (not backing off).
    pub(crate) fn provider_may_call(&self) -> bool {
        self.shared
            .provider_health
            .get(self.scale_set.id)
            .may_call(std::time::Instant::now())
    }

    /// Feeds a failed create or delete to the back-off planner, and flags the scale set as
    /// needing attention with the provider's own message when it says so.
    async fn provider_failed(&self, error: &Error) -> Result<(), Error> {
        let policy = self.shared.settings.provider_backoff();
        let health = self.shared.provider_health.get(self.scale_set.id);
        let (next, attention) = health.failed(&policy, std::time::Instant::now(), fastrand::f64());
        let provider = self.scale_set.spec.provider().as_str();
        self.shared
            .provider_health
            .set(self.scale_set.id, provider, next);
        if let Attention::Flag { failures, retry_in } = attention {
            let reason = format!(
                "provider {:?} failed {failures} time(s) in a row: {}; no instance is created or \
                 deleted before the next try in {}s (instances to delete are kept as deleting \
                 and deleted then); check the provider and its cloud",
                self.scale_set.spec.provider(),
                chain(error),
                retry_in.as_secs()
            );
            tracing::error!(%reason, "provider failing");
            record(
                self.shared,
                self.lease,
                ReasonCode::ProviderFailing,
                &reason,
                |s| {
                    s.state = ScaleSetState::Error;
                },
            )
            .await?;
        }
        Ok(())
    }

    /// Feeds a create or delete that worked to the back-off planner, and clears the flag when
    /// it says so.
    async fn provider_succeeded(&self) -> Result<(), Error> {
        let policy = self.shared.settings.provider_backoff();
        let health = self.shared.provider_health.get(self.scale_set.id);
        let (next, attention) = health.succeeded(&policy);
        let provider = self.scale_set.spec.provider().as_str();
        self.shared
            .provider_health
            .set(self.scale_set.id, provider, next);
        // The provider is back: its other scale sets stop waiting out their back-off.
        self.shared
            .provider_health
            .provider_answered(provider, std::time::Instant::now());
        if attention == Attention::Clear {
            let reason = format!(
                "provider {:?} answers again; serving",
                self.scale_set.spec.provider()
            );
            tracing::info!(%reason, "provider recovered");
            record(
                self.shared,
                self.lease,
                ReasonCode::ProviderRecovered,
                &reason,
                |s| {
                    if s.state == ScaleSetState::Error {
                        s.state = ScaleSetState::Ready;
                    }
                },
            )
            .await?;
        }
        Ok(())
    }

    /// Deletes again the instances of the served scale set whose delete failed (rows left
    /// `deleting`), once the provider's back-off allows.
    pub(crate) async fn retry_deletions(&self, instances: &[Instance]) -> Result<(), Error> {
        for instance in instances
            .iter()
            .filter(|i| i.status == InstanceStatus::Deleting && self.is_current(i))
        {
            if !self.provider_may_call() {
                break;
            }
            self.remove_everywhere(instance).await?;
        }
        Ok(())
    }
}

/// Runs a call again once when GitHub rejected the admin token: the client has dropped it,
/// so the second attempt runs the token chain anew (an expired token is not a failure).
pub async fn again_on_token<T, F, Fut>(call: F) -> Result<T, scaleset_github::Error>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, scaleset_github::Error>>,
{
    match call().await {
        Err(e) if e.is_admin_token_rejected() => call().await,
        other => other,
    }
}

/// Runs `futures` at once on the calling task and returns their outputs in order (the JIT
/// configs of one message's runners: N POSTs in flight, no task spawned).
pub async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

fn instance_id(instance: &Instance) -> Result<InstanceId, Error> {
    instance_id_of(instance.provider_id.as_deref().unwrap_or(&instance.name))
}

/// One of GitHub's runner downloads as GARM hands it to providers (its `RunnerApplicationDownload`
/// field names; empty fields left out, as Go's `omitempty` does).
fn runner_tool(download: &RunnerDownload) -> RunnerTool {
    let given = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    RunnerTool {
        os: given(&download.os),
        architecture: given(&download.architecture),
        download_url: given(&download.download_url),
        filename: given(&download.filename),
        temp_download_token: download.temp_download_token.clone(),
        sha256_checksum: download.sha256_checksum.clone(),
    }
}

fn instance_id_of(text: &str) -> Result<InstanceId, Error> {
    InstanceId::new(text).ok_or_else(|| Error::InstanceId {
        instance: text.to_owned(),
    })
}
