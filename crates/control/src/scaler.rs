//! The scaler: executes the planner's decisions and the message handler's retirements with the
//! client, the store and the provider.
//!
//! Order of a scale-up, each step durable before the next: a pending instance row (intent) →
//! JIT config (the GitHub runner id recorded) → `creating` → provider create with the pool key
//! → `running`. [`Runners::recover`] finishes or undoes whatever a crash interrupted: a runner
//! whose instance was never created is removed from GitHub, an instance whose runner is gone is
//! deleted, so nothing is duplicated or orphaned.
//!
//! Every decision to remove or keep something is the reconcile planner's
//! ([`crate::planner::reconcile`]); this file looks things up, hands the answers in, and
//! carries out what comes back.

mod drain;
mod reconcile;
mod superseded;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use scaleset_github::{Client, JitConfigRequest, RunnerId, ScaleSetId as GitHubScaleSetId};
use scaleset_provider::{
    BootstrapInstance, CreateRequest, InstanceId, OsArch, OsType, Pool, Provider, SecretString,
    UserDataOptions,
};
use scaleset_store::{Instance, InstanceStatus, Lease, NewInstance, ScaleSet};

use crate::checkpoint::Checkpoint;
use crate::error::{Error, chain, store};
use crate::identity::runner_name;
use crate::planner::reconcile::{
    AfterRemoval, Bootstrap, Recovery, after_removal, bootstrap, deadline_due, owns_found_runner,
    recovered_creating, recovered_registered, recovery, retires_completed, teardown,
};
use crate::planner::{PlanInput, RunnerPhase, RunnerView, plan};
use crate::shared::Shared;

/// What an instance is given to reach the server's instance-facing endpoints.
struct InstanceAccessGrant {
    urls: crate::settings::InstanceUrls,
    token: SecretString,
}

/// The runners of one scale set, as one task serves them.
pub(crate) struct Runners<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) client: &'a Client,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) lease: &'a Lease,
    pub(crate) scale_set: &'a ScaleSet,
    pub(crate) github_id: GitHubScaleSetId,
    pub(crate) pool: Pool,
    pub(crate) rng: fastrand::Rng,
    /// Runners seen online past their deadline in this pass: not asked about again.
    pub(crate) online: HashSet<String>,
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
        &self.scale_set.spec.name
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
        let provider = self.scale_set.spec.provider.clone();
        move |source| Error::Provider {
            provider,
            during,
            source,
        }
    }

    async fn instances(&self) -> Result<Vec<Instance>, Error> {
        self.shared
            .store
            .list_instances(self.scale_set.id)
            .await
            .map_err(store("listing instances"))
    }

    async fn transition(&self, name: &str, to: InstanceStatus) -> Result<(), Error> {
        self.shared
            .store
            .transition_instance(self.lease, name, to)
            .await
            .map_err(store("moving an instance"))?;
        Ok(())
    }

    /// Finishes or undoes what a crash interrupted, and drops runners GitHub no longer has.
    pub(crate) async fn recover(&mut self) -> Result<(), Error> {
        // Rows of a superseded GitHub scale set are retired by the reconciliation below.
        let instances = self.instances().await?;
        for instance in instances.into_iter().filter(|i| self.is_current(i)) {
            let mut found = None;
            let step = match recovery(instance.status, instance.github_runner_id) {
                Recovery::AskProvider => {
                    match self
                        .provider
                        .get(&self.pool, &instance_id(&instance)?)
                        .await
                    {
                        Ok(at_provider) => {
                            found = Some(at_provider);
                            recovered_creating(true)
                        }
                        Err(e) if e.is_not_found() => recovered_creating(false),
                        Err(e) => return Err(self.provider_error("looking up an instance")(e)),
                    }
                }
                Recovery::AskGitHub(runner) => {
                    let result = again_on_token(|| self.client.get_runner(runner)).await;
                    let runner = result.map_err(self.github_error("reading a runner"))?;
                    recovered_registered(runner.as_ref())
                }
                step => step,
            };
            match (step, found) {
                (Recovery::Remove, _) => self.remove_everywhere(&instance).await?,
                (Recovery::RecordProviderId, Some(found)) => {
                    self.shared
                        .store
                        .advance_instance(
                            self.lease,
                            &instance.name,
                            InstanceStatus::Running,
                            Some(&found.provider_id),
                            None,
                        )
                        .await
                        .map_err(store("recording the provider id"))?;
                }
                _ => {}
            }
        }
        // What the store does not know (a wiped database, a stray runner) is reconciled
        // against the provider and GitHub.
        self.reconcile().await
    }

    /// Plans and executes one scaling step from `assigned_jobs`.
    pub(crate) async fn scale(&mut self, assigned_jobs: i64) -> Result<(), Error> {
        let instances = self.instances().await?;
        let views: Vec<RunnerView> = instances
            .iter()
            .map(|i| RunnerView {
                name: i.name.clone(),
                // A row of a superseded GitHub scale set cannot serve this one.
                phase: if self.is_current(i) {
                    phase(i)
                } else {
                    RunnerPhase::Leaving
                },
            })
            .collect();
        let spec = &self.scale_set.spec;
        let step = plan(&PlanInput {
            min_idle: spec.min_idle,
            max_runners: spec.max_runners,
            assigned_jobs,
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
            return Ok(());
        }
        self.listed = None;
        for _ in 0..step.create {
            self.create_runner().await?;
        }
        for name in &step.retire {
            if let Some(instance) = instances.iter().find(|i| &i.name == name) {
                // A runner that took a job meanwhile is marked busy and kept.
                self.remove_everywhere(instance).await?;
            }
        }
        Ok(())
    }

    /// Creates one runner: intent, JIT config, provider instance.
    async fn create_runner(&mut self) -> Result<(), Error> {
        let spec = &self.scale_set.spec;
        let name = runner_name(spec.runner_prefix(), &mut self.rng);
        let timeout = spec.bootstrap_timeout_or(self.shared.settings.default_bootstrap_timeout);
        let deadline = self.shared.clock.now().saturating_add(timeout);
        let pool_key = self.pool.key.as_str().to_owned();
        let instance = self
            .shared
            .store
            .create_instance(
                self.lease,
                NewInstance::pending(&name, pool_key, Some(deadline)),
            )
            .await
            .map_err(store("recording a runner's intent"))?;
        self.shared
            .checkpoints
            .reached(Checkpoint::RunnerIntentRecorded, self.name())
            .await;
        let request = JitConfigRequest::new(&name);
        let result =
            again_on_token(|| self.client.generate_jit_config(self.github_id, &request)).await;
        let jit = match result {
            Ok(jit) => jit,
            Err(e) => {
                // A committed-then-failed POST leaves a runner by this name: remove it with
                // the intent, so the next step starts clean.
                self.remove_everywhere(&instance).await?;
                return Err(self.github_error("generating a JIT config")(e));
            }
        };
        let runner_id = jit.runner.id;
        // The GitHub id and `creating` in one commit (recovery handles a `creating` row with
        // or without a provider instance; a `pending` row never has a runner id now).
        self.shared
            .store
            .advance_instance(
                self.lease,
                &name,
                InstanceStatus::Creating,
                None,
                Some(i64::from(runner_id)),
            )
            .await
            .map_err(store("recording a runner's GitHub id"))?;
        self.shared
            .checkpoints
            .reached(Checkpoint::JitConfigGenerated, self.name())
            .await;
        let access = self
            .grant_access(&name, &jit.encoded_jit_config, timeout)
            .await?;
        let request = CreateRequest {
            bootstrap: self.bootstrap(&name, access),
            jit_config: Some(jit.encoded_jit_config.clone()),
            // GARM bounds a create by the bootstrap timeout; so does the external provider.
            bootstrap_timeout: Some(timeout),
        };
        let created = match self.provider.create(&request).await {
            Ok(created) => created,
            Err(e) => {
                // A lost response may hide a created instance: look before giving up.
                match self.provider.get(&self.pool, &instance_id_of(&name)?).await {
                    Ok(found) => found,
                    Err(_) => {
                        tracing::warn!(runner = %name, error = %chain(&e), "instance create failed; removing the runner from GitHub");
                        let instance = self
                            .shared
                            .store
                            .get_instance(&name)
                            .await
                            .map_err(store("reading an instance"))?;
                        self.remove_everywhere(&instance).await?;
                        return Err(self.provider_error("creating an instance")(e));
                    }
                }
            }
        };
        self.shared
            .store
            .advance_instance(
                self.lease,
                &name,
                InstanceStatus::Running,
                Some(&created.provider_id),
                None,
            )
            .await
            .map_err(store("recording the provider id"))?;
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
            .shared
            .store
            .grant_instance_access(self.lease, name, jit_config, bootstrap_timeout)
            .await
            .map_err(store("granting an instance its token"))?;
        Ok(Some(InstanceAccessGrant { urls, token }))
    }

    fn bootstrap(&self, name: &str, access: Option<InstanceAccessGrant>) -> BootstrapInstance {
        let spec = &self.scale_set.spec;
        let (callback_url, metadata_url, instance_token) = match access {
            Some(grant) => (grant.urls.callback, grant.urls.metadata, grant.token),
            None => (String::new(), String::new(), SecretString::from("")),
        };
        BootstrapInstance {
            name: name.to_owned(),
            tools: vec![],
            repo_url: self.client.config_url().as_str().to_owned(),
            callback_url,
            metadata_url,
            instance_token,
            ssh_keys: vec![],
            extra_specs: (!spec.extra_specs.is_null()).then(|| spec.extra_specs.clone()),
            github_runner_group: spec.runner_group.name.clone(),
            ca_cert_bundle: None,
            arch: OsArch::Amd64,
            os_type: OsType::Linux,
            flavor: spec.flavor.clone(),
            image: spec.image.clone(),
            labels: spec.labels.clone(),
            pool_id: self.pool.key.clone(),
            user_data_options: UserDataOptions::default(),
            jit_config_enabled: true,
            proxy_config: None,
        }
    }

    /// Marks the runner busy (a `JobStarted` named it).
    pub(crate) async fn started(&self, runner: &str) -> Result<(), Error> {
        match self.shared.store.get_instance(runner).await {
            Ok(i) if i.scale_set_id == self.scale_set.id && i.status == InstanceStatus::Running => {
                self.transition(runner, InstanceStatus::Busy).await
            }
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(store("reading an instance")(e)),
        }
    }

    /// Retires the runner a `JobCompleted` named (ephemeral: it is done).
    pub(crate) async fn completed(&self, runner: &str) -> Result<(), Error> {
        match self.shared.store.get_instance(runner).await {
            Ok(i) if retires_completed(&i, self.scale_set.id) => self.remove_everywhere(&i).await,
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(store("reading an instance")(e)),
        }
    }

    /// Removes runners that did not come online by their bootstrap deadline.
    pub(crate) async fn check_deadlines(&mut self) -> Result<(), Error> {
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
        let now = self.shared.clock.now();
        for instance in instances {
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
                }
                Bootstrap::Late => {
                    tracing::warn!(runner = %instance.name, "runner not online by its bootstrap deadline; removing it");
                    self.shared
                        .store
                        .append_event(
                            self.scale_set.id,
                            "bootstrap_timeout",
                            &format!(
                                "runner {} was not online by its bootstrap deadline; removed",
                                instance.name
                            ),
                        )
                        .await
                        .map_err(store("appending an event"))?;
                    self.remove_everywhere(&instance).await?;
                }
            }
        }
        Ok(())
    }

    /// Removes a runner from GitHub (a busy one stays, marked busy), its instance from the
    /// provider, and its row from the store.
    async fn remove_everywhere(&self, instance: &Instance) -> Result<(), Error> {
        let runner_id = match instance.github_runner_id {
            Some(id) => Some(RunnerId::from(id)),
            None => {
                // An interrupted JIT POST may have registered it: find it by its unique name.
                let result =
                    again_on_token(|| self.client.get_runner_by_name(&instance.name)).await;
                result
                    .map_err(self.github_error("looking up a runner by name"))?
                    .filter(|r| owns_found_runner(r, self.github_id))
                    .map(|r| r.id)
            }
        };
        if let Some(runner) = runner_id {
            let result = again_on_token(|| self.client.remove_runner(runner)).await;
            let removal = result.map_err(self.github_error("removing a runner"))?;
            match after_removal(removal, instance.status) {
                AfterRemoval::Proceed => {}
                AfterRemoval::MarkBusy => {
                    return self.transition(&instance.name, InstanceStatus::Busy).await;
                }
                AfterRemoval::Keep => return Ok(()),
            }
        }
        let steps = teardown(instance.status);
        if steps.mark_deleting {
            self.transition(&instance.name, InstanceStatus::Deleting)
                .await?;
        }
        if steps.delete_instance {
            self.provider
                .delete(&self.pool, &instance_id(instance)?)
                .await
                .map_err(self.provider_error("deleting an instance"))?;
        }
        self.shared
            .store
            .delete_instance(self.lease, &instance.name)
            .await
            .map_err(store("removing an instance row"))?;
        tracing::info!(runner = %instance.name, "runner removed");
        Ok(())
    }
}

/// Runs a call again once when GitHub rejected the admin token: the client has dropped it,
/// so the second attempt runs the token chain anew (an expired token is not a failure).
pub(crate) async fn again_on_token<T, F, Fut>(call: F) -> Result<T, scaleset_github::Error>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, scaleset_github::Error>>,
{
    match call().await {
        Err(e) if e.is_admin_token_rejected() => call().await,
        other => other,
    }
}

fn instance_id(instance: &Instance) -> Result<InstanceId, Error> {
    instance_id_of(instance.provider_id.as_deref().unwrap_or(&instance.name))
}

fn instance_id_of(text: &str) -> Result<InstanceId, Error> {
    InstanceId::new(text).ok_or_else(|| Error::Config {
        what: format!("instance {text:?}"),
        reason: "not a valid provider instance id".to_owned(),
    })
}
