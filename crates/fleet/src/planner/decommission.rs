//! The decommission planner (issue 34): what tearing this controller down deletes, waits for
//! and leaves, decided from the world (GitHub's scale sets and runners, the providers'
//! instances listed by our pool keys) and, when there is one, the store. Pure: no I/O, no
//! clock; whether the `--wait` ran out is a value.
//!
//! The rules (docs/operations.md, "Decommission"):
//! - a scale set is ours when it carries our owner label, or when the store's record says we
//!   created it ([`plan_deletion`] decides that, as the API's delete does); another
//!   controller's owner label is never ours, whatever the flags; one we adopted (the record
//!   says adopted or known, and no owner label of ours) is detached — left on GitHub, our
//!   runners and instances removed, the record removed — unless `include_adopted`; anything
//!   else is skipped, with why;
//! - an instance is ours only by our pool key (`<controller id>_<scale-set id>`);
//! - a busy runner (and its instance) is waited for until the wait runs out, then skipped, or
//!   killed with `force_busy`; a scale set is deleted only once none of its runners is left;
//! - the steps come in the order they are applied: idle runners retired, instances deleted,
//!   scale sets deleted or detached, sessions deleted, the store's records removed last.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use scaleset_store::ScaleSet;
use uuid::Uuid;

use super::deletion::{Deletion, plan_deletion};
use super::fleet::{Hasher, PlanDigest};

/// What to tear down: the whole controller, one entity, or one scale set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Everything this controller owns in the configured entities.
    Controller,
    /// One entity (as its path, e.g. `acme` or `acme/web`).
    Entity(String),
    /// One scale set of one entity, by name.
    ScaleSet {
        /// The entity's path.
        entity: String,
        /// The scale set's name.
        name: String,
    },
}

impl Scope {
    fn covers(&self, entity: &str, name: &str) -> bool {
        match self {
            Self::Controller => true,
            Self::Entity(e) => e == entity,
            Self::ScaleSet { entity: e, name: n } => e == entity && n == name,
        }
    }
}

/// A scale set listed on GitHub in one of the configured entities' runner groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitHubSet {
    /// The entity's path.
    pub entity: String,
    /// GitHub's id.
    pub github_id: i64,
    /// Its name.
    pub name: String,
    /// Its label names (the owner label among them, if any).
    pub labels: Vec<String>,
}

/// A runner registered on one of the listed scale sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitHubRunner {
    /// The scale set it is registered to.
    pub scale_set_id: i64,
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Whether it is running a job.
    pub busy: bool,
}

/// A provider instance listed by one of our pool keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundInstance {
    /// The configured provider that listed it.
    pub provider: String,
    /// The pool key it is tagged with.
    pub pool_key: String,
    /// Its name (the runner's name).
    pub name: String,
}

/// A scale set the store holds (none without a store).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredSet {
    /// The entity's path.
    pub entity: String,
    /// The record.
    pub record: ScaleSet,
}

/// What the planner decides from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecommissionInput<'a> {
    /// This controller's id (the pool keys' prefix).
    pub controller: Uuid,
    /// This controller's owner label.
    pub owner_label: &'a str,
    /// Every scale set in the configured entities' runner groups.
    pub github: &'a [GitHubSet],
    /// Every runner on those scale sets.
    pub runners: &'a [GitHubRunner],
    /// Every instance the providers list by our pool keys.
    pub instances: &'a [FoundInstance],
    /// The store's scale sets.
    pub stored: &'a [StoredSet],
    /// What to tear down.
    pub scope: &'a Scope,
    /// Delete adopted scale sets on GitHub too, instead of detaching them.
    pub include_adopted: bool,
    /// Kill busy runners once the wait ran out, instead of skipping them.
    pub force_busy: bool,
    /// Whether the wait for busy runners ran out (or there is none).
    pub waited_out: bool,
}

/// What one step is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    /// A runner registered on GitHub.
    Runner {
        /// Its scale set's GitHub id.
        scale_set_id: i64,
        /// Its id.
        id: i64,
        /// Its name.
        name: String,
    },
    /// A provider instance.
    Instance {
        /// The provider.
        provider: String,
        /// Its pool key.
        pool_key: String,
        /// Its name.
        name: String,
    },
    /// A GitHub scale set.
    ScaleSet {
        /// The entity's path.
        entity: String,
        /// Its name.
        name: String,
        /// GitHub's id.
        github_id: i64,
    },
    /// A message session the store says we hold.
    Session {
        /// The scale set's GitHub id.
        scale_set_id: i64,
        /// The session id.
        session_id: String,
    },
    /// A store record.
    Record {
        /// The entity's path.
        entity: String,
        /// The scale set's name.
        name: String,
    },
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Act {
    /// Deleted (a runner removed, an instance or scale set deleted, a record removed).
    Delete,
    /// A scale set left on GitHub: only what is ours on it goes.
    Detach,
    /// Busy: waited for.
    Wait,
    /// A busy runner killed (`force_busy`): its instance is deleted mid-job.
    Kill,
    /// Left alone.
    Skip,
}

impl Act {
    /// The word the plan shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::Detach => "detach",
            Self::Wait => "wait",
            Self::Kill => "kill",
            Self::Skip => "skip",
        }
    }

    /// Whether applying the step changes anything.
    pub fn writes(self) -> bool {
        matches!(self, Self::Delete | Self::Detach | Self::Kill)
    }
}

/// Why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Why {
    /// The scale set carries our owner label.
    OwnerLabel,
    /// The store records that this controller created it.
    Created,
    /// The store records it adopted (or known) and `include_adopted` was given.
    AdoptedIncluded,
    /// The store records it adopted (or known): left on GitHub.
    Adopted,
    /// It carries another controller's owner label.
    ForeignOwner,
    /// No owner label of ours and no record of ours.
    NotProvablyOurs,
    /// A runner on one of our scale sets.
    OnOurSet,
    /// A runner on a detached set whose instance carries our pool key.
    OurInstance,
    /// A runner on a detached set with no instance of ours: not ours.
    NotOurRunner,
    /// Tagged with our pool key.
    PoolKey,
    /// Its runner is busy and the wait has not run out.
    Busy,
    /// Its runner was still busy when the wait ran out.
    StillBusy,
    /// Its runner was still busy when the wait ran out, and `force_busy` kills it.
    ForcedBusy,
    /// One of its runners is still busy (waited for or skipped).
    HasBusyRunners,
    /// A pool key that is not this controller's (never listed by ours; kept out by rule).
    ForeignPoolKey,
    /// A session the store holds for a scale set that goes.
    OurSession,
    /// The record of a scale set that goes or is detached.
    RecordOfGone,
    /// The record of a scale set that stays (a busy runner, or not ours on GitHub).
    RecordKept,
}

impl Why {
    /// A stable code (what the digest hashes: rewording leaves it alone).
    pub fn code(self) -> &'static str {
        match self {
            Self::OwnerLabel => "owner_label",
            Self::Created => "created",
            Self::AdoptedIncluded => "adopted_included",
            Self::Adopted => "adopted",
            Self::ForeignOwner => "foreign_owner",
            Self::NotProvablyOurs => "not_provably_ours",
            Self::OnOurSet => "on_our_set",
            Self::OurInstance => "our_instance",
            Self::NotOurRunner => "not_our_runner",
            Self::PoolKey => "pool_key",
            Self::Busy => "busy",
            Self::StillBusy => "still_busy",
            Self::ForcedBusy => "forced_busy",
            Self::HasBusyRunners => "has_busy_runners",
            Self::ForeignPoolKey => "foreign_pool_key",
            Self::OurSession => "our_session",
            Self::RecordOfGone => "record_of_gone",
            Self::RecordKept => "record_kept",
        }
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OwnerLabel => "it carries this controller's owner label",
            Self::Created => "the store records that this controller created it",
            Self::AdoptedIncluded => "adopted, and --include-adopted deletes it",
            Self::Adopted => {
                "adopted: left on GitHub (only our runners and instances go); \
                 --include-adopted deletes it"
            }
            Self::ForeignOwner => "it carries another controller's owner label",
            Self::NotProvablyOurs => {
                "not provably ours: no owner label of this controller and no record that we \
                 created or adopted it"
            }
            Self::OnOurSet => "registered on a scale set of ours",
            Self::OurInstance => "its instance carries our pool key",
            Self::NotOurRunner => "no instance of ours runs it",
            Self::PoolKey => "tagged with our pool key",
            Self::Busy => "running a job: waited for (--wait)",
            Self::StillBusy => {
                "still running a job when --wait ran out: left; --force-busy kills it"
            }
            Self::ForcedBusy => "still running a job when --wait ran out: --force-busy kills it",
            Self::HasBusyRunners => "a runner on it is still busy: deleted once it is empty",
            Self::ForeignPoolKey => "its pool key is not this controller's",
            Self::OurSession => "a message session the store says we hold",
            Self::RecordOfGone => "its scale set is deleted or detached",
            Self::RecordKept => "its scale set stays",
        })
    }
}

/// One step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What it is about.
    pub subject: Subject,
    /// What it does.
    pub act: Act,
    /// Why.
    pub why: Why,
}

/// The plan: the steps in the order they are applied, and their digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecommissionPlan {
    /// The steps.
    pub items: Vec<Item>,
    /// The digest of the steps (subject, act, why's code), as `apply`'s.
    pub digest: PlanDigest,
}

impl DecommissionPlan {
    /// How many steps do `act`.
    pub fn count(&self, act: Act) -> usize {
        self.items.iter().filter(|i| i.act == act).count()
    }
}

/// How one scale set is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Delete(Why),
    Detach,
    Skip(Why),
}

fn foreign_owner(labels: &[String], ours: &str) -> bool {
    labels
        .iter()
        .any(|l| l.starts_with("scaleset-owner-") && !l.eq_ignore_ascii_case(ours))
}

fn verdict(labels: &[String], record: Option<&ScaleSet>, input: &DecommissionInput) -> Verdict {
    if foreign_owner(labels, input.owner_label) {
        return Verdict::Skip(Why::ForeignOwner);
    }
    let labelled = labels
        .iter()
        .any(|l| l.eq_ignore_ascii_case(input.owner_label));
    match record.map(|r| plan_deletion(r, input.include_adopted)) {
        Some(Deletion::OnGitHub(deletion)) if deletion.is_forced() && !labelled => {
            Verdict::Delete(Why::AdoptedIncluded)
        }
        Some(Deletion::OnGitHub(deletion)) if !deletion.is_forced() => {
            Verdict::Delete(Why::Created)
        }
        _ if labelled => Verdict::Delete(Why::OwnerLabel),
        Some(_) => Verdict::Detach,
        None => Verdict::Skip(Why::NotProvablyOurs),
    }
}

/// Plans the decommission (module documentation).
pub(crate) fn plan(input: &DecommissionInput) -> DecommissionPlan {
    let mut runners = Vec::new();
    let mut instances = Vec::new();
    let mut sets = Vec::new();
    let mut sessions = Vec::new();
    let mut records = Vec::new();

    let record_of = |github_id: i64| {
        input
            .stored
            .iter()
            .find(|s| s.record.github_id == Some(github_id))
    };
    // Every GitHub set in scope, judged; and which sets' instances are ours to act on.
    let mut judged: BTreeMap<i64, Verdict> = BTreeMap::new();
    for set in input.github {
        if !input.scope.covers(&set.entity, &set.name) {
            continue;
        }
        let record = record_of(set.github_id).map(|s| &s.record);
        judged.insert(set.github_id, verdict(&set.labels, record, input));
    }
    // Stored sets GitHub no longer lists: nothing on GitHub, their instances and records go.
    let listed: BTreeSet<i64> = input.github.iter().map(|s| s.github_id).collect();
    let mut gone: BTreeSet<i64> = BTreeSet::new();
    for stored in input.stored {
        if let Some(id) = stored.record.github_id
            && !listed.contains(&id)
            && input
                .scope
                .covers(&stored.entity, stored.record.spec.name().as_str())
        {
            gone.insert(id);
        }
    }
    let instance_names: BTreeSet<&str> = input
        .instances
        .iter()
        .filter(|i| our_pool(&i.pool_key, input.controller).is_some())
        .map(|i| i.name.as_str())
        .collect();

    // Runners: only on sets that go or are detached.
    let mut busy_names: BTreeMap<&str, (Act, Why)> = BTreeMap::new();
    let mut busy_sets: BTreeSet<i64> = BTreeSet::new();
    for runner in input.runners {
        let Some(verdict) = judged.get(&runner.scale_set_id) else {
            continue;
        };
        let subject = Subject::Runner {
            scale_set_id: runner.scale_set_id,
            id: runner.id,
            name: runner.name.clone(),
        };
        let base_why = match verdict {
            Verdict::Skip(_) => continue,
            Verdict::Delete(_) => Why::OnOurSet,
            Verdict::Detach if instance_names.contains(runner.name.as_str()) => Why::OurInstance,
            Verdict::Detach => {
                runners.push(Item {
                    subject,
                    act: Act::Skip,
                    why: Why::NotOurRunner,
                });
                continue;
            }
        };
        let (act, why) = if !runner.busy {
            (Act::Delete, base_why)
        } else if !input.waited_out {
            (Act::Wait, Why::Busy)
        } else if input.force_busy {
            (Act::Kill, Why::ForcedBusy)
        } else {
            (Act::Skip, Why::StillBusy)
        };
        if runner.busy && act != Act::Kill {
            busy_sets.insert(runner.scale_set_id);
        }
        if runner.busy {
            busy_names.insert(runner.name.as_str(), (act, why));
        }
        runners.push(Item { subject, act, why });
    }

    // Instances: ours by pool key; one whose set is out of scope is left out of the plan.
    for instance in input.instances {
        let subject = Subject::Instance {
            provider: instance.provider.clone(),
            pool_key: instance.pool_key.clone(),
            name: instance.name.clone(),
        };
        let Some(set_id) = our_pool(&instance.pool_key, input.controller) else {
            instances.push(Item {
                subject,
                act: Act::Skip,
                why: Why::ForeignPoolKey,
            });
            continue;
        };
        let in_scope = judged.contains_key(&set_id)
            || gone.contains(&set_id)
            || (*input.scope == Scope::Controller && !listed.contains(&set_id));
        if !in_scope {
            continue;
        }
        let (act, why) = match busy_names.get(instance.name.as_str()) {
            Some((Act::Kill, why)) => (Act::Delete, *why),
            Some((act, why)) => (*act, *why),
            None => (Act::Delete, Why::PoolKey),
        };
        instances.push(Item { subject, act, why });
    }

    // Scale sets, then the sessions and records of those that go.
    let mut leaving: BTreeSet<i64> = gone.clone();
    for set in input.github {
        let Some(verdict) = judged.get(&set.github_id) else {
            continue;
        };
        let (act, why) = match *verdict {
            Verdict::Skip(why) => (Act::Skip, why),
            Verdict::Detach => (Act::Detach, Why::Adopted),
            Verdict::Delete(_) if busy_sets.contains(&set.github_id) => {
                let act = if input.waited_out {
                    Act::Skip
                } else {
                    Act::Wait
                };
                (act, Why::HasBusyRunners)
            }
            Verdict::Delete(why) => (Act::Delete, why),
        };
        if act.writes() {
            leaving.insert(set.github_id);
        }
        sets.push(Item {
            subject: Subject::ScaleSet {
                entity: set.entity.clone(),
                name: set.name.clone(),
                github_id: set.github_id,
            },
            act,
            why,
        });
    }
    for stored in input.stored {
        if !input
            .scope
            .covers(&stored.entity, stored.record.spec.name().as_str())
        {
            continue;
        }
        let goes = match stored.record.github_id {
            Some(id) => leaving.contains(&id),
            None => true,
        };
        if goes
            && let (Some(id), Some(session)) = (stored.record.github_id, &stored.record.session_id)
        {
            sessions.push(Item {
                subject: Subject::Session {
                    scale_set_id: id,
                    session_id: session.clone(),
                },
                act: Act::Delete,
                why: Why::OurSession,
            });
        }
        records.push(Item {
            subject: Subject::Record {
                entity: stored.entity.clone(),
                name: stored.record.spec.name().to_string(),
            },
            act: if goes { Act::Delete } else { Act::Skip },
            why: if goes {
                Why::RecordOfGone
            } else {
                Why::RecordKept
            },
        });
    }

    let mut items = runners;
    items.append(&mut instances);
    items.append(&mut sets);
    items.append(&mut sessions);
    items.append(&mut records);
    let digest = digest(&items, input);
    DecommissionPlan { items, digest }
}

fn digest(items: &[Item], input: &DecommissionInput) -> PlanDigest {
    let mut h = Hasher::sha256();
    h.field("scaleset decommission plan v1");
    h.field(&input.controller.to_string());
    h.field(&items.len().to_string());
    for item in items {
        match &item.subject {
            Subject::Runner {
                scale_set_id,
                id,
                name,
            } => {
                h.field("runner");
                h.field(&scale_set_id.to_string());
                h.field(&id.to_string());
                h.field(name);
            }
            Subject::Instance {
                provider,
                pool_key,
                name,
            } => {
                h.field("instance");
                h.field(provider);
                h.field(pool_key);
                h.field(name);
            }
            Subject::ScaleSet {
                entity,
                name,
                github_id,
            } => {
                h.field("scale_set");
                h.field(entity);
                h.field(name);
                h.field(&github_id.to_string());
            }
            Subject::Session {
                scale_set_id,
                session_id,
            } => {
                h.field("session");
                h.field(&scale_set_id.to_string());
                h.field(session_id);
            }
            Subject::Record { entity, name } => {
                h.field("record");
                h.field(entity);
                h.field(name);
            }
        }
        h.field(item.act.as_str());
        h.field(item.why.code());
    }
    h.finish()
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Runner {
                scale_set_id,
                id,
                name,
            } => write!(f, "runner {name} (id {id}, scale set {scale_set_id})"),
            Self::Instance {
                provider,
                pool_key,
                name,
            } => write!(f, "instance {name} (provider {provider}, pool {pool_key})"),
            Self::ScaleSet {
                entity,
                name,
                github_id,
            } => write!(f, "scale set {entity}/{name} (GitHub id {github_id})"),
            Self::Session {
                scale_set_id,
                session_id,
            } => write!(f, "session {session_id} (scale set {scale_set_id})"),
            Self::Record { entity, name } => write!(f, "record {entity}/{name}"),
        }
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<6} {}: {}", self.act.as_str(), self.subject, self.why)
    }
}

#[cfg(test)]
mod tests;

/// The GitHub scale-set id of `pool_key` when it is one of `controller`'s pool keys (the
/// domain's one reading of a pool key).
fn our_pool(pool_key: &str, controller: Uuid) -> Option<i64> {
    scaleset_domain::pool_key_scale_set(pool_key, controller).map(i64::from)
}
