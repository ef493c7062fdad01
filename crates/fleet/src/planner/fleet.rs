//! The fleet planner: pure code from a declared fleet (credentials, entities, scale sets), what
//! the store holds and what GitHub showed for scale sets the store does not hold yet, to one
//! step per credentials, entity and scale set: create / adopt / update / detach / refuse /
//! unchanged, each with its reason, and a [`PlanDigest`] over the plan's data.
//!
//! No I/O and no clock: the driver (`crate::fleet`) reads the store and asks GitHub, then
//! executes the steps. Adoption is previewed by running the real adoption machine
//! (`scaleset-adopt`) on the GitHub listing until it would write (create, patch or open a
//! session) or decides, so a plan says what the ensure step will decide, by the same rules.
//!
//! Invariants (property-tested in `fleet/tests.rs`): every declared scale set gets exactly one
//! step and every stored one not declared gets one too; a stored scale set is never created
//! again (no second store row for one `(entity kind, group, name)`); detach happens only when
//! pruning, never to a declared scale set nor one with instances; the digest is a function of
//! the plan's data alone, so the same inputs give the same digest, any change of a step's data
//! changes it, and rewording a reason's message does not.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

pub use crate::plan_digest::PlanDigest;
use scaleset_adopt::{
    Command, Desired, Evidence, Fact, GithubScaleSetId, Identity, Input, Machine, Outcome, Refusal,
    RetryBounds, RunnerGroupId, ScaleSet as GitHubScaleSet, Step,
};
use scaleset_store::ExposeSecret as _;
use scaleset_store::{
    Auth, Credentials, CredentialsId, Entity, EntityId, EntityKind, NewCredentials, ScaleSet,
    ScaleSetId, ScaleSetSpec, SecretString,
};

/// A declared fleet: what the fleet file (or an API request) asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fleet {
    /// Credentials, with their secrets read.
    pub credentials: Vec<NewCredentials>,
    /// Scale sets.
    pub scale_sets: Vec<DeclaredScaleSet>,
}

impl Fleet {
    /// The keys of its scale sets, in declared order.
    pub fn keys(&self) -> Vec<ScaleSetKey> {
        self.scale_sets.iter().map(DeclaredScaleSet::key).collect()
    }
}

/// One declared scale set.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredScaleSet {
    /// The name of the credentials serving it (declared in the fleet or already stored).
    pub credentials: String,
    /// The organization, repository or enterprise it belongs to.
    pub entity: EntityKind,
    /// The desired scale set (`runner_group.id` is ignored: the store caches it).
    pub spec: ScaleSetSpec,
    /// The takeover note of a scale set imported from GARM (`scalesetctl import garm`):
    /// evidence for the GitHub set with its id and name.
    pub takeover: Option<scaleset_adopt::Takeover>,
}

impl DeclaredScaleSet {
    /// The key the store and GitHub know this scale set by.
    pub fn key(&self) -> ScaleSetKey {
        ScaleSetKey {
            entity: self.entity.clone(),
            runner_group: self.spec.runner_group().name.clone(),
            name: self.spec.name().to_string(),
        }
    }
}

/// A scale set's identity across the store and GitHub: entity, runner group name and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScaleSetKey {
    /// The entity.
    pub entity: EntityKind,
    /// The runner group's name.
    pub runner_group: String,
    /// The scale set's name.
    pub name: String,
}

impl fmt::Display for ScaleSetKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} in runner group {:?} of {}",
            self.name, self.runner_group, self.entity
        )
    }
}

/// What the store holds, as the planner reads it.
#[derive(Debug, Clone, Default)]
pub struct World {
    /// Every stored credentials.
    pub credentials: Vec<Credentials>,
    /// Every stored entity.
    pub entities: Vec<Entity>,
    /// Every stored scale set.
    pub scale_sets: Vec<ScaleSet>,
    /// How many instances each stored scale set has (absent: none).
    pub instances: HashMap<ScaleSetId, usize>,
    /// The scale sets the process's own configuration declares (the fleet every start
    /// applies): a stored one that a plan's fleet leaves out is declared there, not made
    /// through the API, and is never pruned (the next start would store it again).
    pub configured: Vec<ScaleSetKey>,
}

/// What GitHub showed for a declared scale set the store does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// GitHub was not asked (the worker's start-up apply) or could not answer; the ensure
    /// step decides create or adopt when it runs.
    Skipped {
        /// Why, for the plan's reason.
        why: String,
    },
    /// GitHub has no runner group of the declared name.
    NoRunnerGroup,
    /// The runner group and the scale sets GitHub listed under the declared name.
    Listed {
        /// The runner group's id.
        runner_group_id: u64,
        /// The scale sets the name query returned, as GitHub showed them.
        scale_sets: Vec<GitHubScaleSet>,
    },
}

/// What the planner decides from.
#[derive(Debug, Clone, Copy)]
pub struct FleetInput<'a> {
    /// The declared fleet.
    pub fleet: &'a Fleet,
    /// The store's state.
    pub world: &'a World,
    /// GitHub's answers for declared scale sets the store does not hold (absent: skipped).
    pub lookups: &'a HashMap<ScaleSetKey, Lookup>,
    /// Who we are on GitHub (for the adoption preview).
    pub identity: &'a Identity,
    /// Detach stored scale sets the fleet does not declare (off: they are kept).
    pub prune: bool,
}

/// What to do with one scale set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Store it; GitHub has none, so the ensure step creates it (or GitHub was not asked).
    Create,
    /// Store it; the ensure step adopts the scale set GitHub has.
    Adopt,
    /// Change the stored spec.
    Update,
    /// Remove it from the store; GitHub's scale set is left alone.
    Detach,
    /// Nothing is written; the reason says why and what to do.
    Refuse,
    /// Nothing to do.
    Unchanged,
}

impl Action {
    /// A stable lowercase name (`create`, `adopt`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Adopt => "adopt",
            Self::Update => "update",
            Self::Detach => "detach",
            Self::Refuse => "refuse",
            Self::Unchanged => "unchanged",
        }
    }

    /// Whether applying it writes to the store.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Self::Create | Self::Adopt | Self::Update | Self::Detach
        )
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a scale set gets its action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Create: GitHub has no scale set of that name in the group.
    NotOnGitHub,
    /// Create: GitHub was not asked; the ensure step creates or adopts by the adoption rules.
    NotLookedUp {
        /// Why GitHub was not asked.
        why: String,
    },
    /// Adopt: GitHub's scale set carries ownership evidence (or policy `any` allows it).
    Adoptable {
        /// GitHub's id.
        github_id: GithubScaleSetId,
        /// The evidence seen (empty under policy `any`).
        evidence: Vec<Evidence>,
        /// The GARM controller id of a takeover note that vouched for it
        /// ([`Evidence::ImportedFrom`]).
        imported_from: Option<String>,
    },
    /// Adopt: the adoption machine would patch GitHub's drifted scale set (`repair = true`).
    AdoptRepairing {
        /// GitHub's id.
        github_id: GithubScaleSetId,
    },
    /// Adopt: under policy `any`, unless the session probe finds another owner's listener.
    AdoptAfterProbe {
        /// GitHub's id.
        github_id: GithubScaleSetId,
    },
    /// Refuse: the adoption machine refuses GitHub's scale set.
    Refused(Refusal),
    /// Refuse: the adoption machine ended without deciding (it should not; a driver bug).
    Undecided {
        /// What it said.
        why: String,
    },
    /// Refuse: GitHub has no runner group of that name.
    NoRunnerGroup,
    /// Refuse: the credentials are neither declared nor stored.
    UnknownCredentials,
    /// Refuse: the store holds this scale set under other credentials.
    HeldByOtherCredentials {
        /// The stored scale set.
        existing: ScaleSetId,
    },
    /// Update: the declared spec differs from the stored one (see the changes).
    SpecChanged,
    /// Unchanged: the stored spec is the declared one.
    UpToDate,
    /// Unchanged: the stored spec is the declared one but for `enabled`: the set was disabled
    /// (drained) through the API, and a fleet never enables a disabled set.
    KeptDisabled,
    /// Unchanged: stored but declared nowhere (neither in this fleet nor in the
    /// configuration), and the plan does not prune: lost on a database loss.
    NotDeclared,
    /// Unchanged: not in this fleet, but declared in the process's configuration file, which
    /// every start applies; never pruned.
    DeclaredInConfiguration,
    /// Detach: stored, not declared, and the plan prunes.
    Pruned,
    /// Refuse: pruning would detach it, but it still has instances.
    HasInstances {
        /// How many.
        count: usize,
    },
}

impl Reason {
    /// A stable snake_case code for the reason (API, CLI and docs).
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotOnGitHub => "not_on_github",
            Self::NotLookedUp { .. } => "not_looked_up",
            Self::Adoptable { .. } => "adoptable",
            Self::AdoptRepairing { .. } => "adopt_repairing",
            Self::AdoptAfterProbe { .. } => "adopt_after_probe",
            Self::Refused(_) => "adoption_refused",
            Self::Undecided { .. } => "undecided",
            Self::NoRunnerGroup => "no_runner_group",
            Self::UnknownCredentials => "unknown_credentials",
            Self::HeldByOtherCredentials { .. } => "held_by_other_credentials",
            Self::SpecChanged => "spec_changed",
            Self::UpToDate => "up_to_date",
            Self::KeptDisabled => "kept_disabled",
            Self::NotDeclared => "not_declared",
            Self::DeclaredInConfiguration => "declared_in_configuration",
            Self::Pruned => "pruned",
            Self::HasInstances { .. } => "has_instances",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotOnGitHub => f.write_str("GitHub has no scale set of that name in the group"),
            Self::NotLookedUp { why } => write!(
                f,
                "GitHub was not asked ({why}); the worker creates or adopts it by the adoption \
                 rules"
            ),
            Self::Adoptable {
                github_id,
                evidence,
                imported_from,
            } => {
                if let Some(garm) = imported_from {
                    write!(f, "imported from GARM {garm}: ")?;
                }
                write!(
                    f,
                    "GitHub's scale set {github_id} is adopted{}",
                    scaleset_adopt::evidence_sentence(evidence)
                )
            }
            Self::AdoptRepairing { github_id } => write!(
                f,
                "GitHub's scale set {github_id} is ours but drifted; repair is on, so adoption \
                 patches it"
            ),
            Self::AdoptAfterProbe { github_id } => write!(
                f,
                "policy any: GitHub's scale set {github_id} is adopted unless a session probe \
                 finds another owner's listener"
            ),
            Self::Refused(refusal) => write!(
                f,
                "{} ({refusal}); what to do: {}",
                refusal.code(),
                refusal.remediation()
            ),
            Self::Undecided { why } => write!(f, "the adoption preview did not decide: {why}"),
            Self::NoRunnerGroup => f.write_str(
                "GitHub has no runner group of that name; create it on GitHub or correct the \
                 scale set",
            ),
            Self::UnknownCredentials => f.write_str(
                "no credentials of that name are declared or stored; declare them in the fleet",
            ),
            Self::HeldByOtherCredentials { existing } => write!(
                f,
                "the store holds this scale set ({existing}) under other credentials; detach it \
                 first, or declare it with the credentials it is stored under"
            ),
            Self::SpecChanged => f.write_str("the declared spec differs from the stored one"),
            Self::UpToDate => f.write_str("the stored spec is the declared one"),
            Self::KeptDisabled => f.write_str(
                "the stored spec is the declared one, but the scale set was disabled (drained) \
                 through the API and a fleet never enables it again: `scalesetctl scale-set \
                 update NAME --enabled true` serves it again",
            ),
            Self::NotDeclared => f.write_str(
                "stored but declared nowhere (made through the API, or applied from another \
                 fleet): not declared, lost on a database loss; kept, as the plan does not \
                 prune (`scalesetctl fleet export` writes it as a fleet file)",
            ),
            Self::DeclaredInConfiguration => f.write_str(
                "not in this fleet, but declared in the server's configuration file, which \
                 every start applies: kept, never pruned (edit it there)",
            ),
            Self::Pruned => f.write_str(
                "stored but not declared, and the plan prunes: removed from the store, left on \
                 GitHub",
            ),
            Self::HasInstances { count } => write!(
                f,
                "not declared, but it still has {count} instance(s); drain it (max_runners = 0) \
                 before pruning"
            ),
        }
    }
}

/// One field a step writes: its name, the stored value and the new one (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The field (`max_runners`, `labels`, `endpoint.base_url`, `secret`, ...).
    pub field: &'static str,
    /// The stored value.
    pub from: Option<String>,
    /// The value written.
    pub to: Option<String>,
}

/// What to do with one declared credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CredentialsAction {
    /// Store them.
    Create,
    /// Replace the stored endpoint or secret.
    Update,
    /// Nothing to do.
    Unchanged,
}

impl CredentialsAction {
    /// A stable lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Unchanged => "unchanged",
        }
    }
}

/// One declared credentials' step. Secrets never appear in it: a changed secret shows as the
/// change `secret` from `sealed` to `replaced`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialsStep {
    /// The credentials' name.
    pub name: String,
    /// What to do.
    pub action: CredentialsAction,
    /// The stored credentials, if any.
    pub existing: Option<CredentialsId>,
    /// What changes.
    pub changes: Vec<Change>,
}

/// One entity the declared scale sets need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityStep {
    /// The entity.
    pub kind: EntityKind,
    /// The credentials reaching it.
    pub credentials: String,
    /// The stored entity; `None`: it is created.
    pub existing: Option<EntityId>,
}

/// One scale set's step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSetStep {
    /// Which scale set.
    pub key: ScaleSetKey,
    /// The credentials serving it (declared, or the stored entity's for undeclared ones).
    pub credentials: String,
    /// What to do.
    pub action: Action,
    /// Why.
    pub reason: Reason,
    /// The stored scale set, if any.
    pub existing: Option<ScaleSetId>,
    /// The fields written (all of them for create and adopt).
    pub changes: Vec<Change>,
}

/// The plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetPlan {
    /// One step per declared credentials, in declared order.
    pub credentials: Vec<CredentialsStep>,
    /// The entities the declared scale sets need, in first-use order.
    pub entities: Vec<EntityStep>,
    /// One step per declared scale set (declared order), then one per stored scale set the
    /// fleet does not declare (by key).
    pub scale_sets: Vec<ScaleSetStep>,
    /// Whether the plan prunes undeclared scale sets.
    pub prune: bool,
    /// The digest of all of the above (and of the declared secrets, which the steps hide).
    pub digest: PlanDigest,
}

impl FleetPlan {
    /// Whether applying it writes nothing.
    pub fn is_noop(&self) -> bool {
        self.credentials
            .iter()
            .all(|c| c.action == CredentialsAction::Unchanged)
            && self.entities.iter().all(|e| e.existing.is_some())
            && self.scale_sets.iter().all(|s| !s.action.writes())
    }

    /// How many scale-set steps have this action.
    pub fn count(&self, action: Action) -> usize {
        self.scale_sets
            .iter()
            .filter(|s| s.action == action)
            .count()
    }
}

/// Plans the fleet. See the module documentation for the invariants.
pub fn plan(input: &FleetInput<'_>) -> FleetPlan {
    let world = input.world;
    let credentials = credentials_steps(input.fleet, world);
    let credentials_id = |name: &str| {
        world
            .credentials
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.id)
    };
    let declared_names: Vec<&str> = input
        .fleet
        .credentials
        .iter()
        .map(|c| c.name.as_str())
        .collect();

    let mut entities: Vec<EntityStep> = Vec::new();
    let mut scale_sets = Vec::new();
    let mut matched: Vec<ScaleSetId> = Vec::new();
    for declared in &input.fleet.scale_sets {
        let key = declared.key();
        let stored_credentials = credentials_id(&declared.credentials);
        let known =
            stored_credentials.is_some() || declared_names.contains(&declared.credentials.as_str());
        // Every stored row with this key, whichever credentials it is under.
        let rows: Vec<&ScaleSet> = world
            .scale_sets
            .iter()
            .filter(|s| key_of(world, s).as_ref() == Some(&key))
            .collect();
        matched.extend(rows.iter().map(|s| s.id));
        let entity = stored_credentials.and_then(|cid| {
            world
                .entities
                .iter()
                .find(|e| e.kind == declared.entity && e.credentials_id == cid)
        });
        let ours = rows
            .iter()
            .find(|s| entity.is_some_and(|e| e.id == s.entity_id));
        let (action, reason, existing, changes) = match (known, ours, rows.first()) {
            (false, _, _) => (Action::Refuse, Reason::UnknownCredentials, None, Vec::new()),
            (true, Some(stored), _) => {
                let changes = spec_changes(Some(&stored.spec), &declared.spec);
                if changes.is_empty() {
                    let reason = if stored.spec.enabled() == declared.spec.enabled() {
                        Reason::UpToDate
                    } else {
                        Reason::KeptDisabled
                    };
                    (Action::Unchanged, reason, Some(stored.id), changes)
                } else {
                    (
                        Action::Update,
                        Reason::SpecChanged,
                        Some(stored.id),
                        changes,
                    )
                }
            }
            (true, None, Some(other)) => (
                Action::Refuse,
                Reason::HeldByOtherCredentials { existing: other.id },
                Some(other.id),
                Vec::new(),
            ),
            (true, None, None) => {
                let (action, reason) = preview(input, declared, input.lookups.get(&key));
                let changes = if action.writes() {
                    spec_changes(None, &declared.spec)
                } else {
                    Vec::new()
                };
                (action, reason, None, changes)
            }
        };
        if action.writes()
            && !entities
                .iter()
                .any(|e| e.kind == declared.entity && e.credentials == declared.credentials)
        {
            entities.push(EntityStep {
                kind: declared.entity.clone(),
                credentials: declared.credentials.clone(),
                existing: entity.map(|e| e.id),
            });
        }
        scale_sets.push(ScaleSetStep {
            key,
            credentials: declared.credentials.clone(),
            action,
            reason,
            existing,
            changes,
        });
    }

    let mut undeclared: Vec<ScaleSetStep> = world
        .scale_sets
        .iter()
        .filter(|s| !matched.contains(&s.id))
        .filter_map(|stored| {
            let entity = world.entities.iter().find(|e| e.id == stored.entity_id)?;
            let credentials = world
                .credentials
                .iter()
                .find(|c| c.id == entity.credentials_id)
                .map_or_else(String::new, |c| c.name.clone());
            let count = input.world.instances.get(&stored.id).copied().unwrap_or(0);
            let key = key_of(world, stored)?;
            let configured = world.configured.contains(&key);
            let (action, reason) = match (configured, input.prune, count) {
                (true, _, _) => (Action::Unchanged, Reason::DeclaredInConfiguration),
                (false, false, _) => (Action::Unchanged, Reason::NotDeclared),
                (false, true, 0) => (Action::Detach, Reason::Pruned),
                (false, true, count) => (Action::Refuse, Reason::HasInstances { count }),
            };
            Some(ScaleSetStep {
                key,
                credentials,
                action,
                reason,
                existing: Some(stored.id),
                changes: Vec::new(),
            })
        })
        .collect();
    undeclared.sort_by_key(|s| {
        (
            s.key.entity.to_string(),
            s.key.runner_group.clone(),
            s.key.name.clone(),
        )
    });
    scale_sets.extend(undeclared);

    let digest = digest(
        input.fleet,
        &credentials,
        &entities,
        &scale_sets,
        input.prune,
    );
    FleetPlan {
        credentials,
        entities,
        scale_sets,
        prune: input.prune,
        digest,
    }
}

/// The key of a stored scale set (`None` if its entity is not stored, which the store's
/// foreign keys rule out).
fn key_of(world: &World, scale_set: &ScaleSet) -> Option<ScaleSetKey> {
    let entity = world
        .entities
        .iter()
        .find(|e| e.id == scale_set.entity_id)?;
    Some(ScaleSetKey {
        entity: entity.kind.clone(),
        runner_group: scale_set.spec.runner_group().name.clone(),
        name: scale_set.spec.name().to_string(),
    })
}

fn credentials_steps(fleet: &Fleet, world: &World) -> Vec<CredentialsStep> {
    fleet
        .credentials
        .iter()
        .map(|declared| {
            let stored = world.credentials.iter().find(|c| c.name == declared.name);
            let mut changes = Vec::new();
            let from = |get: fn(&Credentials) -> String| stored.map(get);
            let mut compare = |field, from: Option<String>, to: String| {
                if from.as_deref() != Some(to.as_str()) {
                    changes.push(Change {
                        field,
                        from,
                        to: Some(to),
                    });
                }
            };
            compare(
                "endpoint.base_url",
                from(|c| c.endpoint.base_url.clone()),
                declared.endpoint.base_url.clone(),
            );
            compare(
                "endpoint.api_base_url",
                from(|c| c.endpoint.api_base_url.clone()),
                declared.endpoint.api_base_url.clone(),
            );
            compare(
                "endpoint.ca_bundle",
                from(|c| bundle(c.endpoint.ca_bundle.as_deref())),
                bundle(declared.endpoint.ca_bundle.as_deref()),
            );
            compare(
                "endpoint.trust_roots",
                from(|c| trust_roots(&c.endpoint)),
                trust_roots(&declared.endpoint),
            );
            compare(
                "auth",
                from(|c| auth_kind(&c.auth)),
                auth_kind(&declared.auth),
            );
            // The secret alone: an App renamed from its App ID to its client id (the `auth`
            // change above) keeps its key, and the plan says so.
            if stored.is_none_or(|c| {
                secret(&c.auth).expose_secret() != secret(&declared.auth).expose_secret()
            }) {
                changes.push(Change {
                    field: "secret",
                    from: stored.map(|_| "sealed".to_owned()),
                    to: Some("replaced".to_owned()),
                });
            }
            let action = match (stored, changes.is_empty()) {
                (None, _) => CredentialsAction::Create,
                (Some(_), false) => CredentialsAction::Update,
                (Some(_), true) => CredentialsAction::Unchanged,
            };
            CredentialsStep {
                name: declared.name.clone(),
                action,
                existing: stored.map(|c| c.id),
                changes,
            }
        })
        .collect()
}

/// A CA bundle as a plan shows it: whether there is one and how long, never its text.
fn bundle(pem: Option<&str>) -> String {
    pem.map_or_else(|| "none".to_owned(), |p| format!("{} bytes", p.len()))
}

/// The configuration's word for the endpoint's trust roots (a CA bundle is its own field).
fn trust_roots(endpoint: &scaleset_store::Endpoint) -> String {
    if endpoint.system_trust {
        "system".to_owned()
    } else {
        "builtin".to_owned()
    }
}

/// The secret of `auth` (a PAT, an App's private key).
fn secret(auth: &Auth) -> &SecretString {
    match auth {
        Auth::Pat { token } => token,
        Auth::App { private_key, .. } => private_key,
    }
}

fn auth_kind(auth: &Auth) -> String {
    match auth {
        Auth::Pat { .. } => "pat".to_owned(),
        Auth::App {
            app,
            installation_id,
            ..
        } => format!("app {app} installation {installation_id}"),
    }
}

/// How a plan shows one spec field.
type Field = fn(&ScaleSetSpec) -> String;

/// Every field of `to` that differs from `from` (all of them when there is no `from`). The
/// runner group's cached id is not part of a spec the operator writes. Two rules for a stored
/// `from`:
///
/// - a field the declared spec leaves at its default shows as `(default: value)`, so a reset
///   (a key removed from the file) never reads as a change to nothing; the runner prefix is
///   compared as used (empty means the name), so `""` and the name are no change;
/// - `enabled` from false to true is no change: a fleet never enables a set that was disabled
///   (drained) through the API, only `scalesetctl scale-set update NAME --enabled true` does
///   (see [`applied_spec`]).
pub(crate) fn spec_changes(from: Option<&ScaleSetSpec>, to: &ScaleSetSpec) -> Vec<Change> {
    let fields: [(&'static str, Field); 28] = [
        ("name", |s| s.name().to_string()),
        ("runner_group", |s| s.runner_group().name.clone()),
        ("labels", |s| s.label_texts().join(",")),
        ("disable_update", |s| s.disable_update().to_string()),
        ("provider", |s| s.provider().to_string()),
        ("image", |s| s.image().to_owned()),
        ("flavor", |s| s.flavor().to_owned()),
        ("os_type", |s| s.os_type().as_str().to_owned()),
        ("os_arch", |s| s.os_arch().as_str().to_owned()),
        ("http_proxy", |s| {
            s.runner_setup().http_proxy.clone().unwrap_or_default()
        }),
        ("https_proxy", |s| {
            s.runner_setup().https_proxy.clone().unwrap_or_default()
        }),
        ("no_proxy", |s| {
            s.runner_setup().no_proxy.clone().unwrap_or_default()
        }),
        ("ssh_keys", |s| s.runner_setup().ssh_keys.join("\n")),
        ("extra_packages", |s| {
            s.runner_setup().extra_packages.join(",")
        }),
        ("disable_updates_on_boot", |s| {
            s.runner_setup().disable_updates_on_boot.to_string()
        }),
        ("enable_boot_debug", |s| {
            s.runner_setup().enable_boot_debug.to_string()
        }),
        ("runner_install_template", |s| {
            s.runner_setup()
                .runner_install_template
                .clone()
                .unwrap_or_default()
        }),
        ("min_idle", |s| s.min_idle().to_string()),
        ("max_runners", |s| s.max_runners().to_string()),
        ("bootstrap_timeout", |s| seconds(s.bootstrap_timeout())),
        ("scale_down_delay", |s| seconds(s.scale_down_delay())),
        ("max_idle_lifetime", |s| seconds(s.max_idle_lifetime())),
        ("max_lifetime", |s| seconds(s.max_lifetime())),
        ("runner_prefix", |s| s.runner_prefix().to_owned()),
        ("extra_specs", |s| s.extra_specs().to_string()),
        ("enabled", |s| s.enabled().to_string()),
        ("adoption_policy", |s| {
            s.adoption_policy().as_str().to_owned()
        }),
        ("repair", |s| s.repair().to_string()),
    ];
    let defaults = from.and_then(|_| defaults_of(to));
    fields
        .iter()
        .filter(|(field, _)| {
            !(*field == "enabled" && from.is_some_and(|f| !f.enabled()) && to.enabled())
        })
        .filter_map(|(field, get)| {
            let old = from.map(get);
            let new = get(to);
            if old.as_deref() == Some(new.as_str()) {
                return None;
            }
            let shown = match &defaults {
                Some(defaults) if default_of(field, get, to, defaults) => {
                    format!("(default: {})", if new.is_empty() { "empty" } else { &new })
                }
                _ => new,
            };
            Some(Change {
                field,
                from: old,
                to: Some(shown),
            })
        })
        .collect()
}

/// Whether `to` leaves `field` at its default, as the plan shows it (the runner prefix as
/// used: the name, written or left empty).
fn default_of(field: &str, get: &Field, to: &ScaleSetSpec, defaults: &ScaleSetSpec) -> bool {
    match field {
        // No default: the name is the key, and a provider must be named.
        "name" | "provider" => false,
        _ => get(to) == get(defaults),
    }
}

/// The spec the one parser makes of `spec`'s name and provider alone: every other field at
/// its default.
fn defaults_of(spec: &ScaleSetSpec) -> Option<ScaleSetSpec> {
    ScaleSetSpec::parse(scaleset_store::RawScaleSetSpec {
        name: Some(spec.name().to_string()),
        provider: Some(spec.provider().to_string()),
        ..scaleset_store::RawScaleSetSpec::default()
    })
    .ok()
}

/// What an update writes over `stored`: the declared spec, with the cached runner group id
/// kept (the group's name is part of the key) and `enabled` only ever turned off (a set
/// disabled through the API stays so; see [`spec_changes`]).
pub(crate) fn applied_spec(stored: &ScaleSetSpec, declared: &ScaleSetSpec) -> ScaleSetSpec {
    let mut spec = declared.clone();
    spec.set_runner_group_id(stored.runner_group().id);
    spec.set_enabled(stored.enabled() && declared.enabled());
    spec
}

fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs())
}

/// What the adoption machine would do with GitHub's listing, run until it would write or
/// decides. Creating in the store is the same for create and adopt; the preview tells them
/// apart for the operator.
fn preview(
    input: &FleetInput<'_>,
    declared: &DeclaredScaleSet,
    lookup: Option<&Lookup>,
) -> (Action, Reason) {
    let (group, listed) = match lookup {
        None => {
            return (
                Action::Create,
                Reason::NotLookedUp {
                    why: "no lookup was made".to_owned(),
                },
            );
        }
        Some(Lookup::Skipped { why }) => {
            return (Action::Create, Reason::NotLookedUp { why: why.clone() });
        }
        Some(Lookup::NoRunnerGroup) => return (Action::Refuse, Reason::NoRunnerGroup),
        Some(Lookup::Listed {
            runner_group_id,
            scale_sets,
        }) => (*runner_group_id, scale_sets),
    };
    let spec = &declared.spec;
    let mut machine = Machine::new(Input {
        desired: Desired {
            name: spec.name().to_string(),
            runner_group_id: RunnerGroupId(group),
            labels: spec.label_texts(),
            disable_update: spec.disable_update(),
        },
        known_id: None,
        policy: spec.adoption_policy().into(),
        repair: spec.repair(),
        probe: false,
        identity: input.identity.clone(),
        retry: RetryBounds::default(),
        takeover: declared.takeover.clone(),
        await_session: false,
    });
    let mut step = machine.start();
    // The machine ends in a bounded number of steps (rule 8); the bound here only keeps a
    // machine bug from looping the planner.
    for _ in 0..scaleset_adopt::MAX_COMMANDS {
        let fact = match step {
            Step::Done(Outcome::Ready { id, evidence, .. }) => {
                return (
                    Action::Adopt,
                    Reason::Adoptable {
                        github_id: id,
                        imported_from: declared
                            .takeover
                            .as_ref()
                            .filter(|_| evidence.contains(&Evidence::ImportedFrom))
                            .map(|note| note.controller_id.clone()),
                        evidence,
                    },
                );
            }
            Step::Done(Outcome::Refused { reason }) => {
                return (Action::Refuse, Reason::Refused(reason));
            }
            Step::Done(other) => {
                return (
                    Action::Refuse,
                    Reason::Undecided {
                        why: format!("{other:?}"),
                    },
                );
            }
            Step::Do(Command::Create(_)) => return (Action::Create, Reason::NotOnGitHub),
            // An imported set is patched to carry our owner label (and the file's settings):
            // the takeover note is the reason, not a repair.
            Step::Do(Command::Update { id, .. }) => {
                let reason = match &declared.takeover {
                    Some(note) if note.github_id == id => Reason::Adoptable {
                        github_id: id,
                        evidence: vec![Evidence::ImportedFrom],
                        imported_from: Some(note.controller_id.clone()),
                    },
                    _ => Reason::AdoptRepairing { github_id: id },
                };
                return (Action::Adopt, reason);
            }
            Step::Do(Command::OpenSession { id, .. }) => {
                return (Action::Adopt, Reason::AdoptAfterProbe { github_id: id });
            }
            Step::Do(Command::GetById { id }) => listed
                .iter()
                .find(|s| s.id == id)
                .cloned()
                .map_or(Fact::NotFound, Fact::ScaleSet),
            Step::Do(_) => Fact::ScaleSets(listed.clone()),
        };
        step = match machine.next(fact) {
            Ok(next) => next,
            Err(e) => {
                return (Action::Refuse, Reason::Undecided { why: e.to_string() });
            }
        };
    }
    (
        Action::Refuse,
        Reason::Undecided {
            why: "the adoption preview did not end".to_owned(),
        },
    )
}

/// Length-prefixed fields into SHA-256, so no two different plans feed the same bytes.
pub(crate) struct Hasher(ring::digest::Context);

impl Hasher {
    /// A SHA-256 hasher (the decommission planner's digest is made the same way).
    pub(crate) fn sha256() -> Self {
        Self(ring::digest::Context::new(&ring::digest::SHA256))
    }

    /// The digest of everything fed in.
    pub(crate) fn finish(self) -> PlanDigest {
        let hash = self.0.finish();
        PlanDigest::from_sha256(hash.as_ref())
    }

    pub(crate) fn field(&mut self, text: &str) {
        self.0.update(&(text.len() as u64).to_le_bytes());
        self.0.update(text.as_bytes());
    }

    fn option(&mut self, text: Option<&str>) {
        match text {
            None => self.field("-"),
            Some(text) => self.field(&format!("+{text}")),
        }
    }

    /// A reason's data — its code and the ids, counts, evidence and refusal it carries — and
    /// not its words, so rewording a message leaves every digest alone. The `why` of
    /// `NotLookedUp` and `Undecided` explains, it decides nothing, and stays out too.
    fn reason(&mut self, reason: &Reason) {
        self.field(reason.code());
        match reason {
            Reason::Adoptable {
                github_id,
                evidence,
                imported_from,
            } => {
                self.field(&github_id.to_string());
                if let Some(garm) = imported_from {
                    self.field(garm);
                }
                // Evidence and refusals as their serialized data (the adoption machine's own
                // names and values; never their `Display` text).
                self.field(&serde_json::to_string(evidence).unwrap_or_default());
            }
            Reason::AdoptRepairing { github_id } | Reason::AdoptAfterProbe { github_id } => {
                self.field(&github_id.to_string());
            }
            Reason::Refused(refusal) => {
                self.field(&serde_json::to_string(refusal).unwrap_or_default());
            }
            Reason::HeldByOtherCredentials { existing } => self.field(&existing.to_string()),
            Reason::HasInstances { count } => self.field(&count.to_string()),
            Reason::NotOnGitHub
            | Reason::NotLookedUp { .. }
            | Reason::Undecided { .. }
            | Reason::NoRunnerGroup
            | Reason::UnknownCredentials
            | Reason::SpecChanged
            | Reason::UpToDate
            | Reason::KeptDisabled
            | Reason::NotDeclared
            | Reason::DeclaredInConfiguration
            | Reason::Pruned => {}
        }
    }

    fn changes(&mut self, changes: &[Change]) {
        self.field(&changes.len().to_string());
        for change in changes {
            self.field(change.field);
            self.option(change.from.as_deref());
            self.option(change.to.as_deref());
        }
    }
}

fn digest(
    fleet: &Fleet,
    credentials: &[CredentialsStep],
    entities: &[EntityStep],
    scale_sets: &[ScaleSetStep],
    prune: bool,
) -> PlanDigest {
    let mut h = Hasher::sha256();
    // v2: reasons are hashed as data, not as their text.
    h.field("scaleset fleet plan v2");
    h.field(&prune.to_string());
    h.field(&credentials.len().to_string());
    for (step, declared) in credentials.iter().zip(&fleet.credentials) {
        h.field(&step.name);
        h.field(step.action.as_str());
        h.option(step.existing.map(|id| id.to_string()).as_deref());
        h.changes(&step.changes);
        // The secret the apply would write: a different secret is a different plan, though
        // the steps only say "replaced".
        h.field(match &declared.auth {
            Auth::Pat { token } => token.expose_secret(),
            Auth::App { private_key, .. } => private_key.expose_secret(),
        });
    }
    h.field(&entities.len().to_string());
    for step in entities {
        h.field(&step.kind.to_string());
        h.field(&step.credentials);
        h.option(step.existing.map(|id| id.to_string()).as_deref());
    }
    h.field(&scale_sets.len().to_string());
    for step in scale_sets {
        h.field(&step.key.to_string());
        h.field(&step.credentials);
        h.field(step.action.as_str());
        h.reason(&step.reason);
        h.option(step.existing.map(|id| id.to_string()).as_deref());
        h.changes(&step.changes);
    }
    h.finish()
}

#[cfg(test)]
mod tests;
