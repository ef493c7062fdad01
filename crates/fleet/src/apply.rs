//! The fleet driver: plan and apply of a declared fleet through the store, the one code path
//! behind the server's `POST /api/v1/plan` and `/apply` and the worker's start-up apply
//! (DESIGN §6).
//!
//! [`plan_fleet`] reads the store, asks GitHub through a [`FleetLookup`] about declared scale
//! sets the store does not hold yet, and runs the pure planner
//! ([`crate::planner::fleet::plan`]); it writes nothing. [`apply_fleet`] does the same, refuses
//! with [`Error::StalePlan`] when the fresh plan's digest is not the reviewed one, and then
//! executes exactly its steps: credentials, entities, then scale sets. A write that finds the
//! row changed underneath it (a generation or unique-key conflict) stops the apply with
//! [`Error::StalePlan`] too; the steps written before it stay written, and planning again shows
//! what is left. A plan with nothing to write is a no-op: no row, generation or event changes.
//!
//! Scale sets are stored, never created on GitHub here: the controller's ensure step creates
//! or adopts each stored scale set by the adoption rules (the plan's adopt/create preview runs
//! the same machine), so a crash between apply and ensure loses nothing.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use scaleset_github::{CallObserver, ClientConfig};
use scaleset_store::{
    Auth, Endpoint, EntityKind, NewEntity, NewScaleSet, ReasonCode, ScaleSetId, Store,
};

use scaleset_control::{ControllerIdentity, build_client, observed_all};

use crate::error::{Error, chain, store};
use crate::planner::fleet::{
    self, Action, CredentialsAction, DeclaredScaleSet, Fleet, FleetInput, FleetPlan, Lookup,
    PlanDigest, Reason, ScaleSetKey, World, applied_spec, spec_changes,
};
use scaleset_control::Error as LoopError;

/// What GitHub has for a declared scale set the store does not hold (the plan's create /
/// adopt / refuse preview).
#[async_trait]
pub trait FleetLookup: Send + Sync {
    /// Looks up `key` with the given endpoint and authentication.
    async fn lookup(
        &self,
        credentials: &str,
        endpoint: &Endpoint,
        auth: &Auth,
        key: &ScaleSetKey,
    ) -> Lookup;
}

/// Asks GitHub nothing: every new scale set plans as create, and the ensure step decides
/// create or adopt when it runs (the worker's start-up apply).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLookup;

#[async_trait]
impl FleetLookup for NoLookup {
    async fn lookup(&self, _: &str, _: &Endpoint, _: &Auth, _: &ScaleSetKey) -> Lookup {
        Lookup::Skipped {
            why: "this apply does not ask GitHub".to_owned(),
        }
    }
}

type Configure = Box<dyn Fn(ClientConfig) -> ClientConfig + Send + Sync>;

/// Asks GitHub: the runner group by name, then the scale sets by name in it. A failure is a
/// [`Lookup::Skipped`] naming it, so a plan still says what it can.
pub struct GitHubLookup {
    configure: Configure,
    observer: Option<Arc<dyn CallObserver>>,
}

impl std::fmt::Debug for GitHubLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubLookup").finish_non_exhaustive()
    }
}

impl Default for GitHubLookup {
    fn default() -> Self {
        Self::new()
    }
}

impl GitHubLookup {
    /// A lookup with the client's default configuration.
    pub fn new() -> Self {
        Self {
            configure: Box::new(|config| config),
            observer: None,
        }
    }

    /// Reports every call of the lookup's clients to `observer` (the process's metrics).
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Adjusts every client configuration (proxy, retry policy, timeouts).
    #[must_use]
    pub fn with_config(
        mut self,
        configure: impl Fn(ClientConfig) -> ClientConfig + Send + Sync + 'static,
    ) -> Self {
        self.configure = Box::new(configure);
        self
    }
}

#[async_trait]
impl FleetLookup for GitHubLookup {
    async fn lookup(
        &self,
        credentials: &str,
        endpoint: &Endpoint,
        auth: &Auth,
        key: &ScaleSetKey,
    ) -> Lookup {
        let skipped = |why: String| Lookup::Skipped { why };
        let client = match build_client(
            credentials,
            endpoint,
            auth,
            &key.entity,
            self.configure.as_ref(),
        ) {
            Ok(client) => match &self.observer {
                Some(observer) => client.with_observer(Arc::clone(observer)),
                None => client,
            },
            Err(e) => return skipped(chain(&e)),
        };
        let group = match client.get_runner_group_by_name(&key.runner_group).await {
            Ok(Some(group)) => group,
            Ok(None) => return Lookup::NoRunnerGroup,
            Err(e) => {
                return skipped(format!("looking up the runner group failed: {}", chain(&e)));
            }
        };
        let Ok(runner_group_id) = u64::try_from(group.id) else {
            return skipped(format!("github returned runner group id {}", group.id));
        };
        match client.query_scale_sets_by_name(group.id, &key.name).await {
            Ok((_, list)) => match observed_all(&list.value) {
                Ok(scale_sets) => Lookup::Listed {
                    runner_group_id,
                    scale_sets,
                },
                Err(why) => skipped(why.to_string()),
            },
            Err(e) => skipped(format!("listing scale sets by name failed: {}", chain(&e))),
        }
    }
}

/// What an apply did.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The plan that was applied (its digest is the reviewed one).
    pub plan: FleetPlan,
    /// How many rows were written (0 for an unchanged plan).
    pub writes: usize,
    /// The stored scale sets created by this apply, in plan order.
    pub created: Vec<ScaleSetId>,
}

/// Reads the store (and, for pruning, instance counts) as the planner sees it.
async fn read_world(
    store: &dyn Store,
    configured: &[ScaleSetKey],
    prune: bool,
) -> Result<World, Error> {
    let credentials = store
        .list_credentials()
        .await
        .map_err(store_err("listing credentials"))?;
    let entities = store
        .list_entities()
        .await
        .map_err(store_err("listing entities"))?;
    let scale_sets = store
        .list_scale_sets(None)
        .await
        .map_err(store_err("listing scale sets"))?;
    let mut instances = HashMap::new();
    if prune {
        for scale_set in &scale_sets {
            let count = store
                .list_instances(scale_set.id)
                .await
                .map_err(store_err("listing instances"))?
                .len();
            instances.insert(scale_set.id, count);
        }
    }
    Ok(World {
        credentials,
        entities,
        scale_sets,
        instances,
        configured: configured.to_vec(),
    })
}

fn store_err(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    store(during)
}

/// Plans `fleet` against the store and GitHub; writes nothing. `configured` are the keys of
/// the scale sets the process's own configuration declares ([`Fleet::keys`] of the fleet every
/// start applies): a stored one that `fleet` leaves out is shown as declared there, and kept.
///
/// # Errors
///
/// [`Error::Control`] when the store cannot be read.
pub async fn plan_fleet(
    store: &dyn Store,
    lookup: &dyn FleetLookup,
    identity: &ControllerIdentity,
    fleet: &Fleet,
    configured: &[ScaleSetKey],
    prune: bool,
) -> Result<FleetPlan, Error> {
    let world = read_world(store, configured, prune).await?;
    let mut lookups = HashMap::new();
    for declared in &fleet.scale_sets {
        let key = declared.key();
        let stored = world.scale_sets.iter().any(|s| {
            s.spec.name().as_str() == key.name
                && s.spec.runner_group().name == key.runner_group
                && world
                    .entities
                    .iter()
                    .any(|e| e.id == s.entity_id && e.kind == key.entity)
        });
        if stored || lookups.contains_key(&key) {
            continue;
        }
        // Declared credentials win over stored ones: the apply writes the declared ones.
        let reach = fleet
            .credentials
            .iter()
            .find(|c| c.name == declared.credentials)
            .map(|c| (c.endpoint.clone(), c.auth.clone()))
            .or_else(|| {
                world
                    .credentials
                    .iter()
                    .find(|c| c.name == declared.credentials)
                    .map(|c| (c.endpoint.clone(), c.auth.clone()))
            });
        if let Some((endpoint, auth)) = reach {
            let found = lookup
                .lookup(&declared.credentials, &endpoint, &auth, &key)
                .await;
            lookups.insert(key, found);
        }
    }
    let adoption = identity.adoption();
    Ok(fleet::plan(&FleetInput {
        fleet,
        world: &world,
        lookups: &lookups,
        identity: &adoption,
        prune,
    }))
}

/// Plans `fleet` again (with `configured` as [`plan_fleet`]) and, if the plan's digest is
/// `expected`, executes its steps.
///
/// # Errors
///
/// [`Error::StalePlan`] (nothing written) when the fresh plan differs from the reviewed one,
/// or (the steps before it written) when a write finds the row changed underneath it;
/// [`Error::Control`] for any other store failure.
pub async fn apply_fleet(
    store: &dyn Store,
    lookup: &dyn FleetLookup,
    identity: &ControllerIdentity,
    fleet: &Fleet,
    configured: &[ScaleSetKey],
    prune: bool,
    expected: &PlanDigest,
) -> Result<Applied, Error> {
    let plan = plan_fleet(store, lookup, identity, fleet, configured, prune).await?;
    if &plan.digest != expected {
        return Err(Error::StalePlan {
            reason: format!(
                "the world changed since plan {expected} was made: planning now gives {}",
                plan.digest
            ),
            current: Some(plan.digest),
        });
    }
    execute(store, fleet, plan).await
}

/// Plans and applies at once, without asking GitHub: the worker's start-up apply, which has
/// no operator to review a plan (the fleet file is the reviewed input).
///
/// Declared credentials whose stored copy the keyring cannot open (sealed with a key that is
/// gone: a new random key at each start, a lost key file) are replaced first, without opening
/// the old secret: the file declares the secret anew, and nothing else could ever read the old
/// one. Only then is the fleet planned, so the plan compares readable credentials.
///
/// # Errors
///
/// As [`apply_fleet`].
pub async fn apply_declared(
    store: &dyn Store,
    identity: &ControllerIdentity,
    fleet: &Fleet,
) -> Result<Applied, Error> {
    for declared in &fleet.credentials {
        // Any other failure (none stored, the database) is the plan's to report.
        if let Err(e) = store.get_credentials_by_name(&declared.name).await
            && e.is_crypto()
        {
            store
                .replace_sealed_credentials(declared.clone())
                .await
                .map_err(written("replacing credentials the keyring cannot open"))?;
            tracing::warn!(
                credentials = %declared.name,
                reason = %chain(&e),
                "stored credentials could not be opened with the configured keys; replaced by \
                 the declared ones"
            );
        }
    }
    // Workers started together on one empty database (PostgreSQL) apply the same fleet at the
    // same moment: all but one find their plan stale (a row another just stored). The file is
    // the reviewed input and applying it is idempotent, so a stale start-up plan is planned
    // again rather than ending the process; the next plan sees the other's rows. Bounded: a
    // world that keeps changing under every attempt is still an error (the chaos soak's seed 14
    // found the exit 1).
    let mut attempt = 1;
    let configured = fleet.keys();
    loop {
        let plan = plan_fleet(store, &NoLookup, identity, fleet, &configured, false).await?;
        match apply_fleet(
            store,
            &NoLookup,
            identity,
            fleet,
            &configured,
            false,
            &plan.digest,
        )
        .await
        {
            Err(Error::StalePlan { reason, .. }) if attempt < DECLARED_APPLY_ATTEMPTS => {
                tracing::info!(attempt, %reason, "the declared fleet changed under the start-up apply (another process applying it); planning again");
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Deletes scale set `id`'s row, reading its generation again when a write of the worker (state,
/// session, cursor) came between the read and the delete: those do not change what the plan
/// decided (the set is undeclared), so they must not make the apply stale.
async fn detach(store: &dyn Store, id: ScaleSetId) -> Result<(), Error> {
    let mut attempt = 1;
    loop {
        let row = store
            .get_scale_set(id)
            .await
            .map_err(written("reading a scale set to detach"))?;
        match store.delete_scale_set(id, row.generation).await {
            Ok(()) => return Ok(()),
            Err(e) if e.is_stale() && attempt < DETACH_ATTEMPTS => attempt += 1,
            Err(e) => return Err(written("detaching a scale set")(e)),
        }
    }
}

/// How many times a detach reads the row again after a concurrent write.
const DETACH_ATTEMPTS: u32 = 5;

/// How many times the start-up apply plans again after finding its plan stale.
const DECLARED_APPLY_ATTEMPTS: u32 = 5;

fn stale(during: &str, error: &scaleset_store::Error) -> Error {
    Error::StalePlan {
        reason: format!("{during}: {}", chain(error)),
        current: None,
    }
}

/// Maps a store error while writing: a conflict or a stale generation means the world
/// changed since the plan.
fn written(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    move |e| {
        if e.is_conflict() || e.is_stale() || e.is_not_found() {
            stale(during, &e)
        } else {
            Error::from(LoopError::Store { during, source: e })
        }
    }
}

async fn execute(store: &dyn Store, fleet: &Fleet, plan: FleetPlan) -> Result<Applied, Error> {
    let mut writes = 0;
    for (step, declared) in plan.credentials.iter().zip(&fleet.credentials) {
        match (step.action, step.existing) {
            (CredentialsAction::Create, _) => {
                store
                    .create_credentials(declared.clone())
                    .await
                    .map_err(written("storing credentials"))?;
            }
            (CredentialsAction::Update, Some(id)) => {
                store
                    .update_credentials(id, declared.clone())
                    .await
                    .map_err(written("updating credentials"))?;
            }
            _ => continue,
        }
        writes += 1;
    }
    let mut entity_ids: HashMap<(EntityKind, String), scaleset_store::EntityId> = HashMap::new();
    for step in &plan.entities {
        let id = match step.existing {
            Some(id) => id,
            None => {
                let credentials = store
                    .get_credentials_by_name(&step.credentials)
                    .await
                    .map_err(written("reading the entity's credentials"))?;
                let entity = store
                    .create_entity(NewEntity {
                        kind: step.kind.clone(),
                        credentials_id: credentials.id,
                    })
                    .await
                    .map_err(written("storing an entity"))?;
                writes += 1;
                entity.id
            }
        };
        entity_ids.insert((step.kind.clone(), step.credentials.clone()), id);
    }
    let declared_by_key: HashMap<ScaleSetKey, &DeclaredScaleSet> =
        fleet.scale_sets.iter().map(|d| (d.key(), d)).collect();
    let mut created = Vec::new();
    for step in &plan.scale_sets {
        let declared = declared_by_key.get(&step.key);
        match (step.action, declared, step.existing) {
            (Action::Create | Action::Adopt, Some(declared), _) => {
                let entity_id = entity_ids
                    .get(&(declared.entity.clone(), declared.credentials.clone()))
                    .copied()
                    .ok_or_else(|| Error::StalePlan {
                        reason: format!("the plan has no entity for scale set {}", step.key),
                        current: None,
                    })?;
                let mut spec = declared.spec.clone();
                spec.set_runner_group_id(None);
                let mut row = store
                    .create_scale_set(NewScaleSet { entity_id, spec })
                    .await
                    .map_err(written("storing a scale set"))?;
                // A set adopted on a takeover note (import garm) keeps the GitHub id the note
                // vouched for, so the ensure step confirms that very set by its id.
                if let Reason::Adoptable {
                    github_id,
                    evidence,
                    imported_from: Some(garm),
                } = &step.reason
                {
                    row.github_id = Some(github_id.0);
                    row.provenance = Some(scaleset_store::Provenance::Adopted);
                    row.evidence.clone_from(evidence);
                    // Kept, so that every ensure by the worker sees the same evidence (and adds
                    // our owner label) and GARM's running instances are found by its pool id.
                    row.takeover.clone_from(&declared.takeover);
                    row = store
                        .update_scale_set(&row)
                        .await
                        .map_err(written("recording an imported scale set's GitHub id"))?;
                    store
                        .append_event(
                            row.id,
                            ReasonCode::Imported,
                            &format!(
                                "imported from GARM {garm}: GitHub scale set {github_id} is \
                                 adopted on its takeover note"
                            ),
                        )
                        .await
                        .map_err(store_err("appending an event"))?;
                }
                store
                    .append_event(row.id, ReasonCode::Declared, &declared_reason(&step.reason))
                    .await
                    .map_err(store_err("appending an event"))?;
                created.push(row.id);
            }
            (Action::Update, Some(declared), Some(id)) => {
                // A read-modify-write that tolerates the worker's own writes to the row (state,
                // session, cursor: they bump its generation too) between our read and our
                // write: only a change of the spec makes the plan stale. Found by CI, where the
                // worker recorded a set `ready` while an operator applied a spec change to it.
                let mut spec_moved = false;
                store
                    .modify_scale_set(id, &mut |row| {
                        spec_moved = spec_changes(Some(&row.spec), &declared.spec) != step.changes;
                        if spec_moved {
                            return;
                        }
                        row.spec = applied_spec(&row.spec, &declared.spec);
                        if declared.takeover.is_some() {
                            row.takeover.clone_from(&declared.takeover);
                        }
                    })
                    .await
                    .map_err(written("updating a scale set"))?;
                if spec_moved {
                    return Err(Error::StalePlan {
                        reason: format!("scale set {} changed since the plan", step.key),
                        current: None,
                    });
                }
                let fields: Vec<&str> = step.changes.iter().map(|c| c.field).collect();
                store
                    .append_event(
                        id,
                        ReasonCode::SpecUpdated,
                        &format!("fleet apply changed {}", fields.join(", ")),
                    )
                    .await
                    .map_err(store_err("appending an event"))?;
            }
            (Action::Detach, None, Some(id)) => {
                detach(store, id).await?;
            }
            _ => continue,
        }
        writes += 1;
    }
    tracing::info!(
        digest = %plan.digest,
        writes,
        create = plan.count(Action::Create),
        adopt = plan.count(Action::Adopt),
        update = plan.count(Action::Update),
        detach = plan.count(Action::Detach),
        refuse = plan.count(Action::Refuse),
        "fleet applied"
    );
    Ok(Applied {
        plan,
        writes,
        created,
    })
}

/// The fleet the process's configuration declares, and the file it is in (DESIGN §6, "one
/// source of truth"): a declared scale set's spec is the file's. The API refuses to change it
/// ([`ConfiguredFleet::refuse_edit`]), plans show a stored set the file declares as declared
/// there, and every other stored set is "not declared": lost on a database loss.
#[derive(Debug, Clone, Default)]
pub struct ConfiguredFleet {
    /// The configuration file's path, as messages name it.
    pub file: String,
    /// Its fleet.
    pub fleet: Fleet,
}

/// Why the API refuses to change a declared scale set, naming the file and the keys to edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredEdit {
    /// The scale set's name.
    pub scale_set: String,
    /// The configuration file that declares it.
    pub file: String,
    /// Its index among the file's `[[scale_set]]` tables.
    pub index: usize,
    /// The keys the request would change (`max_runners`, `labels`, ...; `enabled` when the
    /// file disables the set).
    pub fields: Vec<&'static str>,
}

impl std::fmt::Display for DeclaredEdit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self
            .fields
            .iter()
            .map(|field| format!("scale_set[{}].{field}", self.index))
            .collect();
        write!(
            f,
            "scale set {:?} is declared in the configuration file {} (scale_set[{}]), which \
             every start applies: a change through the API would be reverted there. Edit {} in \
             that file and restart (draining and enabling are allowed through the API)",
            self.scale_set,
            self.file,
            self.index,
            keys.join(", ")
        )
    }
}

impl ConfiguredFleet {
    /// The keys of the scale sets it declares.
    pub fn keys(&self) -> Vec<ScaleSetKey> {
        self.fleet.keys()
    }

    /// Whether it declares the scale set of `spec` in entity `entity`.
    pub fn declares(&self, entity: &EntityKind, spec: &scaleset_store::ScaleSetSpec) -> bool {
        self.declared(&ScaleSetKey {
            entity: entity.clone(),
            runner_group: spec.runner_group().name.clone(),
            name: spec.name().to_string(),
        })
        .is_some()
    }

    /// The declared scale set of `key`, with its index in the file.
    pub fn declared(&self, key: &ScaleSetKey) -> Option<(usize, &DeclaredScaleSet)> {
        self.fleet
            .scale_sets
            .iter()
            .enumerate()
            .find(|(_, declared)| &declared.key() == key)
    }

    /// Whether the API may change scale set `key` from `stored` to `wanted`: an undeclared set
    /// is the API's; a declared one only changes `enabled` (drain and enable are operational
    /// state, kept by every later apply), and is enabled only if the file does not disable it.
    ///
    /// # Errors
    ///
    /// [`DeclaredEdit`] naming the file and the keys to edit there.
    pub fn refuse_edit(
        &self,
        key: &ScaleSetKey,
        stored: &scaleset_store::ScaleSetSpec,
        wanted: &scaleset_store::ScaleSetSpec,
    ) -> Result<(), DeclaredEdit> {
        let Some((index, declared)) = self.declared(key) else {
            return Ok(());
        };
        let mut fields: Vec<&'static str> = spec_changes(Some(stored), wanted)
            .into_iter()
            .map(|change| change.field)
            .filter(|field| *field != "enabled")
            .collect();
        if wanted.enabled() && !stored.enabled() && !declared.spec.enabled() {
            fields.push("enabled");
        }
        if fields.is_empty() {
            Ok(())
        } else {
            Err(DeclaredEdit {
                scale_set: key.name.clone(),
                file: self.file.clone(),
                index,
                fields,
            })
        }
    }
}

/// A scale set on GitHub that carries our owner label, but that the store does not hold and
/// the configuration file does not declare: ours, undeclared. After a database loss this is
/// a set that was made through the API; it is ours, so only two things make sense: declare it
/// (the next start adopts it by its owner label) or decommission it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OursUndeclared {
    /// The entity it was listed in.
    pub entity: EntityKind,
    /// GitHub's id.
    pub github_id: i64,
    /// Its name.
    pub name: String,
    /// Its runner group's name, as GitHub showed it.
    pub runner_group: String,
}

/// An entity whose scale sets could not be listed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlisted {
    /// The entity.
    pub entity: EntityKind,
    /// What failed.
    pub reason: String,
}

/// Lists, for every stored entity, GitHub's scale sets (one call per entity, every runner
/// group: the decommission's listing without the group filter) and keeps those carrying our
/// owner label that neither the store holds (by GitHub id or name) nor `configured` declares.
/// The whole listing takes at most `within`: an API request must answer in bounded time even
/// when GitHub does not (each call retries for about 15 s), so an entity whose listing did not
/// finish by then, or was not reached, is an [`Unlisted`] that says so.
///
/// # Errors
///
/// [`Error::Control`] when the store cannot be read; an entity GitHub does not answer for is an
/// [`Unlisted`], not an error.
pub async fn ours_undeclared(
    store: &dyn Store,
    clients: &dyn scaleset_control::ClientFactory,
    identity: &ControllerIdentity,
    configured: &ConfiguredFleet,
    within: std::time::Duration,
) -> Result<(Vec<OursUndeclared>, Vec<Unlisted>), Error> {
    let deadline = tokio::time::Instant::now() + within;
    let owner = identity.owner_label();
    let entities = store
        .list_entities()
        .await
        .map_err(store_err("listing entities"))?;
    let stored = store
        .list_scale_sets(None)
        .await
        .map_err(store_err("listing scale sets"))?;
    let (mut found, mut unlisted) = (Vec::new(), Vec::new());
    for entity in &entities {
        let listing = async {
            match clients.entity_client(entity.id).await {
                Ok(client) => client.list_scale_sets(None).await.map_err(|e| chain(&e)),
                Err(e) => Err(chain(&e)),
            }
        };
        let listed = tokio::time::timeout_at(deadline, listing)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "not listed: GitHub did not answer within this listing's bound of {} s \
                     (over every entity); ask again",
                    within.as_secs()
                ))
            });
        let listed = match listed {
            Ok(listed) => listed,
            Err(reason) => {
                unlisted.push(Unlisted {
                    entity: entity.kind.clone(),
                    reason,
                });
                continue;
            }
        };
        for set in listed {
            let ours = set
                .labels
                .iter()
                .any(|l| l.name.eq_ignore_ascii_case(&owner));
            let held = stored.iter().any(|s| {
                s.entity_id == entity.id
                    && (s.github_id == Some(set.id.0) || s.spec.name().as_str() == set.name)
            });
            let declared = configured
                .fleet
                .scale_sets
                .iter()
                .any(|d| d.entity == entity.kind && d.spec.name().as_str() == set.name);
            if ours && !held && !declared {
                found.push(OursUndeclared {
                    entity: entity.kind.clone(),
                    github_id: set.id.0,
                    name: set.name,
                    runner_group: set.runner_group_name,
                });
            }
        }
    }
    Ok((found, unlisted))
}

/// The reason of the `declared` event of a scale set a fleet apply stored, a sentence for
/// operators: what the worker does next, without the plan's own vocabulary ("planned as
/// create") or the plan's reason repeated inside it.
fn declared_reason(reason: &Reason) -> String {
    match reason {
        Reason::NotLookedUp { .. } => "stored by a fleet apply; the worker creates it on GitHub, \
             or adopts a scale set of the same name there if it is provably ours"
            .to_owned(),
        Reason::NotOnGitHub => "stored by a fleet apply; GitHub has no scale set of its name in \
             the runner group, so the worker creates it"
            .to_owned(),
        other => format!("stored by a fleet apply: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_event_says_what_happens_next_once() {
        let not_asked = declared_reason(&Reason::NotLookedUp {
            why: "this apply does not ask GitHub".to_owned(),
        });
        assert_eq!(
            not_asked,
            "stored by a fleet apply; the worker creates it on GitHub, or adopts a scale set of \
             the same name there if it is provably ours"
        );
        let created = declared_reason(&Reason::NotOnGitHub);
        assert_eq!(created.matches("creates").count(), 1, "{created}");
        for text in [not_asked, created] {
            assert!(
                !text.contains("planned as") && !text.contains('(') && !text.contains('`'),
                "{text}"
            );
        }
        let adopted = declared_reason(&Reason::Adoptable {
            github_id: scaleset_adopt::GithubScaleSetId(1),
            evidence: vec![scaleset_adopt::Evidence::OwnerLabel],
            imported_from: None,
        });
        assert_eq!(
            adopted,
            "stored by a fleet apply: GitHub's scale set 1 is adopted, proven ours by our owner \
             label"
        );
    }
}
