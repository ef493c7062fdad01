//! Decommission (issue 34): the I/O around the pure decommission planner
//! ([`crate::planner::decommission`]). It reads the world — the scale sets in the configured
//! entities' runner groups, their runners, the providers' instances listed by our pool keys,
//! and the store when there is one — hands it to the planner, and carries out only the steps
//! of the plan the operator reviewed (its digest). It decides nothing itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use scaleset_github::{Client, RunnerGroupId};
use scaleset_provider::{InstanceId, Pool, PoolKey, Provider};
use scaleset_store::{Acquisition, Store};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use scaleset_control::{
    ControllerIdentity, HandsOff, Waited, again_on_token, build_client, our_pool, wait_for,
};

use crate::error::{Error, store};
use crate::planner::decommission::{
    Act, DecommissionInput, DecommissionPlan, FoundInstance, GitHubRunner, GitHubSet, Item, Scope,
    StoredSet, Subject, plan,
};
use crate::planner::deletion::already_gone;
use crate::planner::fleet::{Fleet, PlanDigest};
use scaleset_control::Error as LoopError;

/// The lease holder a decommission takes scale sets' leases as.
const HOLDER: &str = "scaleset-decommission";

/// How often a `--wait` looks at busy runners again.
const POLL: Duration = Duration::from_secs(2);

/// How often a lease this process's control loop is letting go of is tried again.
const RELEASE_POLL: Duration = Duration::from_millis(250);

/// What the operator asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecommissionOptions {
    /// What to tear down.
    pub scope: Scope,
    /// Delete adopted scale sets on GitHub too.
    pub include_adopted: bool,
    /// Kill runners still busy when the wait runs out.
    pub force_busy: bool,
    /// How long to wait for busy runners (zero: not at all).
    pub wait: Duration,
}

/// One entity this controller serves: its path, a client, and the runner groups its scale
/// sets are declared or stored in.
#[derive(Debug, Clone)]
struct Target {
    entity: String,
    client: Client,
    groups: BTreeSet<String>,
}

/// What applying did, step by step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecommissionReport {
    /// Each step carried out, with its outcome in words.
    pub done: Vec<(Item, String)>,
    /// The steps left (waited for too long, skipped, or failed), with why.
    pub left: Vec<(Item, String)>,
}

/// The world a decommission reads and changes: the configured entities (through their
/// clients), the providers and, when there is one, the store.
pub struct Decommission {
    identity: ControllerIdentity,
    targets: Vec<Target>,
    providers: BTreeMap<String, Arc<dyn Provider>>,
    store: Option<Arc<dyn Store>>,
    /// The control loop of this process, asked to let the going scale sets go, and how long
    /// it may take (`None`: no control loop here; a lease held is a refusal).
    hands_off: Option<(HandsOff, Duration)>,
}

impl std::fmt::Debug for Decommission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decommission")
            .field("identity", &self.identity)
            .field("entities", &self.targets.len())
            .field("store", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

struct Facts {
    github: Vec<GitHubSet>,
    runners: Vec<GitHubRunner>,
    instances: Vec<FoundInstance>,
    stored: Vec<StoredSet>,
    /// The provider id of each instance, by (provider, pool key, name).
    instance_ids: HashMap<(String, String, String), InstanceId>,
    /// The client of each listed scale set, by GitHub id.
    clients: HashMap<i64, Client>,
}

impl Decommission {
    /// A decommission of the entities the declared `fleet` and the `store` (if any) name,
    /// with `providers`. `configure` adjusts every client (proxy, retries).
    ///
    /// # Errors
    ///
    /// [`Error::Control`] when a client cannot be built or the store cannot be
    /// read.
    pub async fn new(
        identity: ControllerIdentity,
        fleet: &Fleet,
        providers: BTreeMap<String, Arc<dyn Provider>>,
        store: Option<Arc<dyn Store>>,
        configure: &(
             dyn Fn(scaleset_github::ClientConfig) -> scaleset_github::ClientConfig + Send + Sync
         ),
    ) -> Result<Self, Error> {
        let mut targets: BTreeMap<String, Target> = BTreeMap::new();
        for declared in &fleet.scale_sets {
            let entity = declared.entity.path();
            let group = declared.spec.runner_group().name.clone();
            if let Some(target) = targets.get_mut(&entity) {
                target.groups.insert(group);
                continue;
            }
            let Some(credentials) = fleet
                .credentials
                .iter()
                .find(|c| c.name == declared.credentials)
            else {
                // Credentials only in the store: the store's entities below bring the client.
                continue;
            };
            let client = build_client(
                &credentials.name,
                &credentials.endpoint,
                &credentials.auth,
                &declared.entity,
                configure,
            )?;
            targets.insert(
                entity.clone(),
                Target {
                    entity,
                    client,
                    groups: BTreeSet::from([group]),
                },
            );
        }
        if let Some(store) = &store {
            let entities = store
                .list_entities()
                .await
                .map_err(crate::error::store("listing the stored entities"))?;
            let sets = store
                .list_scale_sets(None)
                .await
                .map_err(crate::error::store("listing the stored scale sets"))?;
            for entity in entities {
                let path = entity.kind.path();
                let groups: BTreeSet<String> = sets
                    .iter()
                    .filter(|s| s.entity_id == entity.id)
                    .map(|s| s.spec.runner_group().name.clone())
                    .collect();
                if let Some(target) = targets.get_mut(&path) {
                    target.groups.extend(groups);
                    continue;
                }
                let credentials = store
                    .get_credentials(entity.credentials_id)
                    .await
                    .map_err(crate::error::store("reading an entity's credentials"))?;
                let client = build_client(
                    &credentials.name,
                    &credentials.endpoint,
                    &credentials.auth,
                    &entity.kind,
                    configure,
                )?;
                targets.insert(
                    path.clone(),
                    Target {
                        entity: path,
                        client,
                        groups,
                    },
                );
            }
        }
        Ok(Self {
            identity,
            targets: targets.into_values().collect(),
            providers,
            store,
            hands_off: None,
        })
    }

    /// Runs beside this process's control loop: a scale set that loop serves is not a
    /// refusal; the loop is asked to let it go ([`HandsOff`]) and the lease is taken once it
    /// has, within `release` (its lease time: a task that stops releases it at once, one that
    /// cannot lets it expire).
    #[must_use]
    pub fn with_hands_off(mut self, hands_off: HandsOff, release: Duration) -> Self {
        self.hands_off = Some((hands_off, release));
        self
    }

    /// Reads the world and plans; `waited_out` says whether busy runners are still waited for.
    async fn look(
        &self,
        options: &DecommissionOptions,
        waited_out: bool,
    ) -> Result<(DecommissionPlan, Facts), Error> {
        let facts = self.read().await?;
        let label = self.identity.owner_label();
        let plan = plan(&DecommissionInput {
            controller: self.identity.id(),
            owner_label: &label,
            github: &facts.github,
            runners: &facts.runners,
            instances: &facts.instances,
            stored: &facts.stored,
            scope: &options.scope,
            include_adopted: options.include_adopted,
            force_busy: options.force_busy,
            waited_out,
        });
        Ok((plan, facts))
    }

    /// The plan, as the operator reviews it (busy runners are shown as waited for when
    /// `options.wait` is above zero, as skipped or killed otherwise).
    ///
    /// # Errors
    ///
    /// A GitHub, provider or store read that failed.
    pub async fn plan(&self, options: &DecommissionOptions) -> Result<DecommissionPlan, Error> {
        Ok(self.look(options, options.wait.is_zero()).await?.0)
    }

    /// Applies the plan whose digest is `reviewed`: refuses ([`Error::StaleDecommission`]) when the
    /// world changed since; then carries out its steps in order, waits for busy runners up to
    /// `options.wait` (looking again every few seconds, acting only on what the reviewed plan
    /// named), and finally skips or kills what is still busy.
    ///
    /// # Errors
    ///
    /// A stale plan, a read that failed, or a step that failed (the steps before it stay done).
    pub async fn apply(
        &self,
        options: &DecommissionOptions,
        reviewed: &PlanDigest,
        cancel: &CancellationToken,
    ) -> Result<DecommissionReport, Error> {
        let (first, facts) = self.look(options, options.wait.is_zero()).await?;
        if &first.digest != reviewed {
            return Err(Error::StaleDecommission {
                current: first.digest,
                reviewed: reviewed.clone(),
            });
        }
        let allowed: BTreeSet<Subject> = first.items.iter().map(|i| i.subject.clone()).collect();
        let let_go = self.let_go(&first, &facts);
        let applied = self
            .apply_taken(options, first, &facts, allowed, cancel)
            .await;
        // Whatever is left of those scale sets (a busy runner skipped, a failed step) is the
        // control loop's to drain again once the decommission's lease runs out.
        if let Some((hands_off, _)) = &self.hands_off {
            for id in let_go {
                hands_off.remove(id);
            }
        }
        applied
    }

    /// The stored scale sets whose records the plan removes, handed to this process's
    /// control loop to let go of (none without one).
    fn let_go(&self, plan: &DecommissionPlan, facts: &Facts) -> Vec<scaleset_store::ScaleSetId> {
        let Some((hands_off, _)) = &self.hands_off else {
            return Vec::new();
        };
        let mut ids = Vec::new();
        for item in &plan.items {
            if let (Subject::Record { entity, name }, Act::Delete) = (&item.subject, item.act)
                && let Some(stored) = facts
                    .stored
                    .iter()
                    .find(|s| &s.entity == entity && s.record.spec.name().as_str() == name)
            {
                hands_off.insert(stored.record.id);
                ids.push(stored.record.id);
            }
        }
        ids
    }

    async fn apply_taken(
        &self,
        options: &DecommissionOptions,
        first: DecommissionPlan,
        reviewed_facts: &Facts,
        mut allowed: BTreeSet<Subject>,
        cancel: &CancellationToken,
    ) -> Result<DecommissionReport, Error> {
        let mut waited_out = options.wait.is_zero();
        self.stop_serving(&first, reviewed_facts, options.wait, cancel)
            .await?;
        // Looked at again now that nothing serves the going scale sets: a worker may have
        // started a runner for a job that arrived between the review and the stop. A runner
        // or an instance of ours on a scale set the reviewed plan deletes, detaches or waits
        // to delete is part of that reviewed decision (the set's delete would take it anyway);
        // the planner decides its step as for any other.
        let (mut current, mut facts) = self.look(options, waited_out).await?;
        let going: BTreeSet<i64> = first
            .items
            .iter()
            .filter_map(|item| match (&item.subject, item.act) {
                (Subject::ScaleSet { github_id, .. }, Act::Delete | Act::Detach | Act::Wait) => {
                    Some(*github_id)
                }
                _ => None,
            })
            .collect();
        for item in &current.items {
            let set = match &item.subject {
                Subject::Runner { scale_set_id, .. } => Some(*scale_set_id),
                Subject::Instance { pool_key, .. } => our_pool(pool_key, self.identity.id()),
                _ => None,
            };
            if set.is_some_and(|id| going.contains(&id)) {
                allowed.insert(item.subject.clone());
            }
        }
        let deadline = Instant::now().checked_add(options.wait);
        let mut report = DecommissionReport::default();
        loop {
            self.carry_out(&current, &facts, &allowed, &mut report, cancel)
                .await?;
            if waited_out || current.count(Act::Wait) == 0 {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                waited_out = true;
            } else if wait_for(cancel, POLL).await == Waited::Cancelled {
                break;
            }
            (current, facts) = self.look(options, waited_out).await?;
        }
        for item in &current.items {
            if allowed.contains(&item.subject) && !item.act.writes() {
                report.left.push((item.clone(), item.why.to_string()));
            }
        }
        Ok(report)
    }

    async fn carry_out(
        &self,
        plan: &DecommissionPlan,
        facts: &Facts,
        allowed: &BTreeSet<Subject>,
        report: &mut DecommissionReport,
        cancel: &CancellationToken,
    ) -> Result<(), Error> {
        for item in &plan.items {
            if !item.act.writes() || !allowed.contains(&item.subject) {
                continue;
            }
            let outcome = self.step(item, facts, cancel).await?;
            tracing::info!(step = %item, outcome, "decommission step");
            report.done.push((item.clone(), outcome));
        }
        Ok(())
    }

    async fn step(
        &self,
        item: &Item,
        facts: &Facts,
        cancel: &CancellationToken,
    ) -> Result<String, Error> {
        let client_of = |id: i64| {
            facts
                .clients
                .get(&id)
                .ok_or(Error::UnlistedScaleSet { github_id: id })
        };
        let github = |during: &'static str, id: i64| {
            move |source| LoopError::GitHub {
                scale_set: id.to_string(),
                during,
                source,
            }
        };
        match (&item.subject, item.act) {
            (
                Subject::Runner {
                    scale_set_id, id, ..
                },
                Act::Delete | Act::Kill,
            ) => {
                let client = client_of(*scale_set_id)?;
                let removal =
                    again_on_token(|| client.remove_runner(scaleset_github::RunnerId(*id)))
                        .await
                        .map_err(github("removing a runner", *scale_set_id))?;
                Ok(match removal {
                    scaleset_github::Removal::Gone => "already gone".to_owned(),
                    // Killed: its instance is deleted next, and the scale set's delete takes
                    // the registration with it.
                    scaleset_github::Removal::StillRunning => {
                        "still running a job: its instance is deleted next".to_owned()
                    }
                    _ => "removed".to_owned(),
                })
            }
            (
                Subject::Instance {
                    provider,
                    pool_key,
                    name,
                },
                _,
            ) => {
                let Some(found) = self.providers.get(provider) else {
                    return Err(Error::ProviderGone {
                        provider: provider.clone(),
                    });
                };
                let key = (provider.clone(), pool_key.clone(), name.clone());
                let id = facts
                    .instance_ids
                    .get(&key)
                    .cloned()
                    .or_else(|| InstanceId::new(name.clone()))
                    .ok_or_else(|| LoopError::InstanceId {
                        instance: name.clone(),
                    })?;
                let pool = PoolKey::parse(pool_key).map_err(|source| LoopError::StoredPoolKey {
                    instance: name.clone(),
                    pool_key: pool_key.clone(),
                    source,
                })?;
                found
                    .delete(&Pool::new(pool), &id)
                    .await
                    .map_err(|source| LoopError::Provider {
                        provider: provider.clone(),
                        during: "deleting an instance",
                        source,
                    })?;
                Ok("deleted".to_owned())
            }
            (Subject::ScaleSet { github_id, .. }, Act::Delete) => {
                let client = client_of(*github_id)?;
                match again_on_token(|| client.delete_scale_set((*github_id).into())).await {
                    Ok(()) => Ok("deleted on GitHub".to_owned()),
                    Err(e) if already_gone(&e) => Ok("already gone on GitHub".to_owned()),
                    Err(e) => Err(github("deleting the scale set", *github_id)(e).into()),
                }
            }
            (Subject::ScaleSet { .. }, _) => Ok("left on GitHub (detached)".to_owned()),
            (
                Subject::Session {
                    scale_set_id,
                    session_id,
                },
                _,
            ) => {
                let Some(client) = facts.clients.get(scale_set_id) else {
                    return Ok("its scale set is gone, and the session with it".to_owned());
                };
                match again_on_token(|| client.delete_session((*scale_set_id).into(), session_id))
                    .await
                {
                    Ok(()) => Ok("deleted".to_owned()),
                    Err(e) if e.status() == Some(404) || e.is_scale_set_not_found() => {
                        Ok("already gone".to_owned())
                    }
                    Err(e) => Err(github("deleting our message session", *scale_set_id)(e).into()),
                }
            }
            (Subject::Record { entity, name }, _) => {
                self.remove_record(facts, entity, name, cancel).await
            }
            (Subject::Runner { .. }, _) => Ok("left".to_owned()),
        }
    }

    /// Stops listening and creating before anything is deleted: the lease of every scale set
    /// whose record goes is taken (a worker still serving one refuses the whole apply, before
    /// any write) and the scale set disabled, so nothing serves or re-creates it meanwhile.
    async fn stop_serving(
        &self,
        plan: &DecommissionPlan,
        facts: &Facts,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<(), Error> {
        for item in &plan.items {
            if let (Subject::Record { entity, name }, Act::Delete) = (&item.subject, item.act) {
                self.take(facts, entity, name, wait, cancel).await?;
            }
        }
        Ok(())
    }

    /// Takes the lease of the stored scale set `entity`/`name` for `wait` and ten minutes, and
    /// disables it; `None` without a store or a record. A lease this process's control loop
    /// holds is waited for while the loop lets it go ([`Self::with_hands_off`]); any other
    /// holder is a refusal.
    async fn take(
        &self,
        facts: &Facts,
        entity: &str,
        name: &str,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<Option<(scaleset_store::Lease, scaleset_store::ScaleSetId)>, Error> {
        let Some(store) = &self.store else {
            return Ok(None);
        };
        let Some(stored) = facts
            .stored
            .iter()
            .find(|s| s.entity == entity && s.record.spec.name() == name)
        else {
            return Ok(None);
        };
        let id = stored.record.id;
        let ttl = wait.saturating_add(Duration::from_secs(600));
        let released_by = self
            .hands_off
            .as_ref()
            .and_then(|(_, release)| Instant::now().checked_add(*release));
        let lease = loop {
            match store
                .acquire_lease(id, HOLDER, ttl)
                .await
                .map_err(store_err("taking the scale set's lease"))?
            {
                Acquisition::Acquired(lease) => break lease,
                Acquisition::Held { holder, .. } => {
                    let ours = self
                        .hands_off
                        .as_ref()
                        .is_some_and(|(hands_off, _)| hands_off.worker() == holder);
                    let in_time = released_by.is_some_and(|by| Instant::now() < by);
                    if !ours || !in_time {
                        return Err(Error::LeaseHeld {
                            scale_set: format!("{entity}/{name}"),
                            holder,
                            ours,
                        });
                    }
                    if wait_for(cancel, RELEASE_POLL).await == Waited::Cancelled {
                        return Err(Error::DecommissionStopped {
                            scale_set: format!("{entity}/{name}"),
                        });
                    }
                }
            }
        };
        let mut current = store
            .get_scale_set(id)
            .await
            .map_err(store_err("reading the scale set's record"))?;
        if current.spec.enabled() {
            current.spec.set_enabled(false);
            store
                .update_scale_set(&current)
                .await
                .map_err(store_err("disabling the scale set"))?;
        }
        Ok(Some((lease, id)))
    }

    /// Removes a scale set's record: its lease taken (a worker serving it refuses the
    /// removal), its instance rows (their instances are gone) and the row.
    async fn remove_record(
        &self,
        facts: &Facts,
        entity: &str,
        name: &str,
        cancel: &CancellationToken,
    ) -> Result<String, Error> {
        let Some(store) = &self.store else {
            return Ok("no store".to_owned());
        };
        let Some((lease, id)) = self
            .take(facts, entity, name, Duration::ZERO, cancel)
            .await?
        else {
            return Ok("already gone".to_owned());
        };
        let rows = store
            .list_instances(id)
            .await
            .map_err(store_err("listing the scale set's instance rows"))?;
        for row in rows {
            store
                .delete_instance(&lease, &row.name)
                .await
                .map_err(store_err("removing an instance row"))?;
        }
        let current = store
            .get_scale_set(id)
            .await
            .map_err(store_err("reading the scale set's record"))?;
        store
            .delete_scale_set(id, current.generation)
            .await
            .map_err(store_err("removing the scale set's record"))?;
        Ok("removed".to_owned())
    }

    async fn read(&self) -> Result<Facts, Error> {
        let mut facts = Facts {
            github: Vec::new(),
            runners: Vec::new(),
            instances: Vec::new(),
            stored: Vec::new(),
            instance_ids: HashMap::new(),
            clients: HashMap::new(),
        };
        let mut entity_paths: HashMap<scaleset_store::EntityId, String> = HashMap::new();
        if let Some(store) = &self.store {
            for entity in store
                .list_entities()
                .await
                .map_err(store_err("listing the stored entities"))?
            {
                entity_paths.insert(entity.id, entity.kind.path());
            }
            for record in store
                .list_scale_sets(None)
                .await
                .map_err(store_err("listing the stored scale sets"))?
            {
                let entity = entity_paths
                    .get(&record.entity_id)
                    .cloned()
                    .unwrap_or_else(|| record.entity_id.to_string());
                facts.stored.push(StoredSet { entity, record });
            }
        }
        for target in &self.targets {
            let github = |during: &'static str| {
                let entity = target.entity.clone();
                move |source| LoopError::GitHub {
                    scale_set: format!("(entity {entity})"),
                    during,
                    source,
                }
            };
            let mut listed: BTreeSet<i64> = BTreeSet::new();
            for group in &target.groups {
                let id = if group == "default" {
                    RunnerGroupId(1)
                } else {
                    match again_on_token(|| target.client.get_runner_group_by_name(group))
                        .await
                        .map_err(github("looking up a runner group"))?
                    {
                        Some(found) => found.id,
                        None => continue,
                    }
                };
                for set in again_on_token(|| target.client.list_scale_sets(Some(id)))
                    .await
                    .map_err(github("listing the runner group's scale sets"))?
                {
                    let github_id = set.id.0;
                    if !listed.insert(github_id) {
                        continue;
                    }
                    facts.clients.insert(github_id, target.client.clone());
                    facts.github.push(GitHubSet {
                        entity: target.entity.clone(),
                        github_id,
                        name: set.name,
                        labels: set.labels.into_iter().map(|l| l.name).collect(),
                    });
                }
            }
            tracing::debug!(entity = %target.entity, groups = ?target.groups, listed = listed.len(), "decommission: listed the entity's scale sets");
            if listed.is_empty() {
                continue;
            }
            for runner in again_on_token(|| target.client.list_runners())
                .await
                .map_err(github("listing the runners"))?
            {
                if listed.contains(&runner.runner_scale_set_id.0) {
                    facts.runners.push(GitHubRunner {
                        scale_set_id: runner.runner_scale_set_id.0,
                        id: runner.id.0,
                        name: runner.name,
                        busy: runner.busy.unwrap_or(false),
                    });
                }
            }
        }
        // Instances, only by our pool keys: of every listed set (a foreign set has none of
        // ours, and listing costs nothing) and of every stored one.
        let mut sets: BTreeSet<i64> = facts.github.iter().map(|s| s.github_id).collect();
        sets.extend(facts.stored.iter().filter_map(|s| s.record.github_id));
        // And of every pool of ours the providers hold, so an instance whose scale set is
        // neither on GitHub nor in the store is found too (provably ours by its pool key).
        for (name, provider) in &self.providers {
            match provider
                .pools()
                .await
                .map_err(|source| LoopError::Provider {
                    provider: name.clone(),
                    during: "listing the pools of this controller's instances",
                    source,
                })? {
                Some(pools) => sets.extend(
                    pools
                        .iter()
                        .filter_map(|key| our_pool(key.as_str(), self.identity.id())),
                ),
                None => tracing::warn!(
                    provider = %name,
                    "this provider cannot list instances across pools: an instance of a scale \
                     set that is neither on GitHub nor in the store is not found through it"
                ),
            }
        }
        for (name, provider) in &self.providers {
            for set in &sets {
                let key = self.identity.pool_key(*set);
                let listed = provider
                    .list(&Pool::new(key.clone()))
                    .await
                    .map_err(|source| LoopError::Provider {
                        provider: name.clone(),
                        during: "listing instances by our pool key",
                        source,
                    })?;
                for instance in listed {
                    facts.instance_ids.insert(
                        (name.clone(), key.to_string(), instance.name.clone()),
                        instance.id(),
                    );
                    facts.instances.push(FoundInstance {
                        provider: name.clone(),
                        pool_key: key.to_string(),
                        name: instance.name,
                    });
                }
            }
        }
        Ok(facts)
    }
}

/// How a GitHub client is adjusted (proxy, retries) before use.
pub type ConfigureClient =
    Arc<dyn Fn(scaleset_github::ClientConfig) -> scaleset_github::ClientConfig + Send + Sync>;

/// What a long-running process (the server with its worker) needs to open a [`Decommission`]
/// whenever one is asked for: the configured entities are read again each time, so an entity
/// added through the API since the start is in it.
#[derive(Clone)]
pub struct DecommissionSource {
    identity: ControllerIdentity,
    fleet: Fleet,
    providers: BTreeMap<String, Arc<dyn Provider>>,
    store: Arc<dyn Store>,
    configure: ConfigureClient,
    hands_off: Option<(HandsOff, Duration)>,
}

impl std::fmt::Debug for DecommissionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecommissionSource")
            .field("identity", &self.identity)
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl DecommissionSource {
    /// The source of the decommissions of the controller `identity` over `store`, with the
    /// declared `fleet`'s entities and the very `providers` the control loop uses (an
    /// in-memory provider built twice would be another, empty cloud).
    pub fn new(
        identity: ControllerIdentity,
        fleet: Fleet,
        providers: BTreeMap<String, Arc<dyn Provider>>,
        store: Arc<dyn Store>,
        configure: ConfigureClient,
    ) -> Self {
        Self {
            identity,
            fleet,
            providers,
            store,
            configure,
            hands_off: None,
        }
    }

    /// Beside this process's control loop: see [`Decommission::with_hands_off`].
    #[must_use]
    pub fn with_hands_off(mut self, hands_off: HandsOff, release: Duration) -> Self {
        self.hands_off = Some((hands_off, release));
        self
    }

    /// A decommission of what the store and the declared fleet name now.
    ///
    /// # Errors
    ///
    /// As [`Decommission::new`].
    pub async fn open(&self) -> Result<Decommission, Error> {
        let configure = self.configure.clone();
        let decommission = Decommission::new(
            self.identity.clone(),
            &self.fleet,
            self.providers.clone(),
            Some(self.store.clone()),
            &move |c| configure(c),
        )
        .await?;
        Ok(match &self.hands_off {
            Some((hands_off, release)) => decommission.with_hands_off(hands_off.clone(), *release),
            None => decommission,
        })
    }
}

fn store_err(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    store(during)
}

/// Parses a scope: `controller` (or nothing), an entity path, or `ENTITY:SCALE_SET`.
pub fn parse_scope(entity: Option<&str>, scale_set: Option<&str>) -> Result<Scope, Error> {
    match (entity, scale_set) {
        (None, None) => Ok(Scope::Controller),
        (Some(entity), None) => Ok(Scope::Entity(entity.to_owned())),
        (Some(entity), Some(name)) => Ok(Scope::ScaleSet {
            entity: entity.to_owned(),
            name: name.to_owned(),
        }),
        (None, Some(name)) => Err(Error::ScopeWithoutEntity {
            scale_set: name.to_owned(),
        }),
    }
}
