//! The three-way reconciliation (DESIGN §5), run when every recovery lands (so after every
//! ensure or adoption, beside the first polls of each listener pass: `recovery.rs`) and then
//! every `reconcile_interval` while listening: the provider's instances listed by our pool key × the store's instances ×
//! GitHub's runners of this scale set.
//!
//! - An instance under our pool key the store does not know, whose runner GitHub still has →
//!   re-recorded (`busy` if GitHub lists it running a job, else `running`, with its ids and a
//!   fresh bootstrap deadline): a wiped database finds its machines again.
//! - An instance under our pool key the store does not know, with no runner on GitHub → its
//!   runner is gone (the JIT registration always precedes the create), so it is deleted.
//! - A GitHub runner of this scale set with our runner-name prefix, known to neither the store
//!   nor the provider → removed from GitHub when idle (a busy one is left for later).
//! - A recorded runner the provider lists stopped or errored, or GitHub lists offline past its
//!   bootstrap deadline, or past its lifetimes → retired (the reconcile planner's
//!   [`crate::planner::reconcile::lifecycle`]; the lifetimes and a failed bootstrap are also
//!   checked after every empty poll).
//!
//! Only the provider's answer for *our* pool key is read, and only runners of *this* scale set
//! whose names carry our prefix are acted on: nothing of another controller is touched. The
//! rules are the reconcile planner's ([`crate::planner::reconcile::reconcile`]); this file
//! gathers the three lists and carries out its actions.

use std::collections::HashSet;

use scaleset_github::RunnerReference;
use scaleset_provider::ProviderInstance;
use scaleset_store::{NewInstance, ReasonCode};

use super::{Runners, again_on_token};
use crate::error::{Error, store};
use crate::planner::reconcile::{Action, Inherited, World, reconcile, rerecorded_status};
use crate::planner::start::recorded_when_landed;
use crate::teardown::{Outcome, Teardown};

impl Runners<'_> {
    fn prefix(&self) -> String {
        let spec = &self.scale_set.spec;
        format!("{}-", spec.runner_prefix())
    }

    /// Takes down an instance no row records, found under `pool_key`, through the teardown
    /// core: whether it is gone now (the core refuses what is not ours).
    async fn delete_unrecorded(
        &self,
        instance: &ProviderInstance,
        pool_key: &str,
    ) -> Result<bool, Error> {
        let core = Teardown::unrecorded(
            instance.name.clone(),
            instance.provider_id.clone(),
            pool_key,
            self.ours(),
            std::time::Instant::now(),
        );
        let ran = self.execute_teardown(core).await?;
        if let Some(error) = ran.failed {
            return Err(error);
        }
        Ok(ran.outcome == Outcome::Removed)
    }

    async fn event(&self, code: ReasonCode, reason: &str) {
        tracing::info!(event = %code, %reason, "reconciled");
        let _ = self
            .shared
            .store
            .append_event(self.scale_set.id, code, reason)
            .await;
    }

    /// Reconciles when `reconcile_interval` has passed since the last pass; says whether it
    /// ran.
    pub(crate) async fn reconcile_if_due(&mut self) -> Result<bool, Error> {
        let due = self.reconcile_due();
        if due {
            self.reconcile().await?;
        }
        Ok(due)
    }

    /// Whether `reconcile_interval` has passed since the last pass (never while a recovery
    /// runs beside the listener: its landing is the reconciliation).
    pub(crate) fn reconcile_due(&self) -> bool {
        !self.touched.recovering()
            && self
                .last_reconciled
                .is_none_or(|at| at.elapsed() >= self.shared.settings.reconcile_interval)
    }

    /// One reconciliation pass.
    pub(crate) async fn reconcile(&mut self) -> Result<(), Error> {
        self.last_reconciled = Some(tokio::time::Instant::now());
        // Rows of a GitHub scale set deleted and replaced: retired as their runners go.
        self.retire_superseded().await?;
        let rows = self.instances().await?;
        let at_provider = self
            .provider
            .list(&self.pool)
            .await
            .map_err(self.provider_error("listing the instances of our pool"))?;
        // A set taken over from GARM: GARM's instances, under its pool id and controller id.
        let garms = match &self.inherited {
            Some(garm) => self
                .provider
                .list(&garm.pool)
                .await
                .map_err(self.provider_error("listing the instances GARM left"))?,
            None => Vec::new(),
        };
        let result = again_on_token(|| self.client.list_runners()).await;
        let runners = result.map_err(self.github_error("listing runners"))?;
        let recorded = recorded_when_landed(&rows, &HashSet::new());
        self.apply_reconcile(&recorded, &rows, &at_provider, &garms, &runners)
            .await
    }

    /// Carries out the reconcile planner's actions on the provider's instances and GitHub's
    /// runners, with `recorded` the names counted as known and `garms` the instances GARM left
    /// (for a set taken over from GARM), then retires the rows of `judged`
    /// [`crate::planner::reconcile::lifecycle`] says are done.
    pub(crate) async fn apply_reconcile(
        &mut self,
        recorded: &HashSet<String>,
        judged: &[scaleset_store::Instance],
        at_provider: &[ProviderInstance],
        garms: &[ProviderInstance],
        runners: &[RunnerReference],
    ) -> Result<(), Error> {
        let prefix = self.prefix();
        let world = World {
            scale_set: self.github_id,
            prefix: &prefix,
            recorded,
            at_provider,
            runners,
            inherited: self.inherited.as_ref().map(|garm| Inherited {
                prefix: &garm.prefix,
                at_provider: garms,
            }),
        };
        // GARM's runners recorded by this pass: judged with the rest below, so an idle or
        // never-booted one is retired in the pass that finds it, not a pass later.
        let mut inherited = Vec::new();
        for action in reconcile(&world) {
            match action {
                Action::Record { instance, runner } => {
                    let timeout = self
                        .scale_set
                        .spec
                        .bootstrap_timeout_or(self.shared.settings.default_bootstrap_timeout);
                    let mut new = NewInstance::pending(
                        instance.name.clone(),
                        self.pool.key.as_str().to_owned(),
                        Some(self.shared.clock.now().saturating_add(timeout)),
                    );
                    new.status = rerecorded_status(runner);
                    new.provider_id = Some(instance.provider_id.clone());
                    new.github_runner_id = Some(i64::from(runner.id));
                    self.rows()
                        .create_instance(self.lease, new)
                        .await
                        .map_err(store("re-recording an instance"))?;
                    self.event(
                        ReasonCode::InstanceRerecorded,
                        &format!(
                            "instance {} under our pool key has live runner {}: recorded again",
                            instance.name, runner.id
                        ),
                    )
                    .await;
                }
                Action::DeleteInstance(instance) => {
                    let pool_key = self.pool.key.as_str().to_owned();
                    if self.delete_unrecorded(instance, &pool_key).await? {
                        self.event(
                            ReasonCode::OrphanInstanceDeleted,
                            &format!(
                                "instance {} under our pool key has no runner on GitHub and no \
                                 record: deleted",
                                instance.name
                            ),
                        )
                        .await;
                    }
                }
                Action::RemoveRunner(runner) => {
                    let core = Teardown::stray_runner(
                        runner.id,
                        runner.name.clone(),
                        self.ours(),
                        std::time::Instant::now(),
                    );
                    match self.execute_teardown(core).await?.outcome {
                        Outcome::Removed => {
                            self.event(
                                ReasonCode::StrayRunnerRemoved,
                                &format!(
                                    "runner {} ({}) has no instance and no record: removed",
                                    runner.name, runner.id
                                ),
                            )
                            .await;
                        }
                        Outcome::Kept => {
                            tracing::debug!(runner = %runner.name, "stray runner is busy; later");
                        }
                        // Gone already: the goal holds.
                        _ => {}
                    }
                }
                Action::AwaitJob(runner) => {
                    tracing::debug!(runner = %runner.name, "stray runner is busy; later");
                }
                Action::Inherit { instance, runner } => {
                    let Some(garm) = &self.inherited else {
                        continue;
                    };
                    let timeout = self
                        .scale_set
                        .spec
                        .bootstrap_timeout_or(self.shared.settings.default_bootstrap_timeout);
                    let mut new = NewInstance::pending(
                        instance.name.clone(),
                        garm.pool.key.as_str().to_owned(),
                        Some(self.shared.clock.now().saturating_add(timeout)),
                    );
                    new.status = rerecorded_status(runner);
                    new.provider_id = Some(instance.provider_id.clone());
                    new.github_runner_id = Some(i64::from(runner.id));
                    let row = self
                        .rows()
                        .create_instance(self.lease, new)
                        .await
                        .map_err(store("recording an instance GARM left"))?;
                    inherited.push(row);
                    self.event(
                        ReasonCode::InstanceInherited,
                        &format!(
                            "GARM's instance {} (pool id {}) with runner {}{} is taken over: \
                             retired when its job ends",
                            instance.name,
                            garm.pool.key,
                            runner.id,
                            if runner.busy == Some(true) {
                                ", running a job,"
                            } else {
                                ""
                            }
                        ),
                    )
                    .await;
                }
                Action::DeleteInherited(instance) => {
                    let Some(garm) = &self.inherited else {
                        continue;
                    };
                    let pool_key = garm.pool.key.as_str().to_owned();
                    if self.delete_unrecorded(instance, &pool_key).await? {
                        self.event(
                            ReasonCode::InheritedInstanceDeleted,
                            &format!(
                                "GARM's instance {} (pool id {}) has no runner on GitHub: deleted",
                                instance.name, garm.pool.key
                            ),
                        )
                        .await;
                    }
                }
            }
        }
        // The recorded runners, with what GitHub and the provider say of them now: stopped
        // or errored instances, runners an outage left offline, lifetimes.
        if inherited.is_empty() {
            return self
                .retire_for_life(judged, Some(runners), Some(at_provider))
                .await;
        }
        let judged: Vec<scaleset_store::Instance> =
            judged.iter().cloned().chain(inherited).collect();
        self.retire_for_life(&judged, Some(runners), Some(at_provider))
            .await
    }
}
