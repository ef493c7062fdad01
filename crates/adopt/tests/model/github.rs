//! A reference model of GitHub's scale-set service for the property tests: scale sets (id,
//! name, group, labels, `disableUpdate`), one session per scale set with its owner, response
//! quirks (omitted `runnerGroupId`, thin list items, a name filter that is case-insensitive or
//! ignored, 409s without owner text, GHES dropping custom labels), injected transient failures
//! before or after the effect, and a competitor acting between any two steps (creating,
//! deleting, holding sessions, and another controller adding or removing its owner label).

use std::collections::BTreeMap;

use scaleset_adopt::{Command, Fact, GithubScaleSetId, RunnerGroupId, ScaleSet, SessionId};

/// Who created a scale set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Creator {
    /// The machine's `Create` (in this or an earlier run).
    Us,
    /// The competitor.
    Competitor,
    /// Present before the test began.
    Preexisting,
}

/// A scale set as GitHub stores it.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) name: String,
    pub(crate) group: u64,
    pub(crate) labels: Vec<String>,
    pub(crate) disable_update: bool,
    pub(crate) creator: Creator,
    /// Ground truth: this controller owns it.
    pub(crate) ours: bool,
}

/// An active message session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) owner: String,
    /// Opened by the machine's `OpenSession` (an ownership probe), on a set not yet proven
    /// ours; never by one of our listeners.
    pub(crate) by_probe: bool,
}

/// How the `name` query filter behaves.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NameFilter {
    Exact,
    CaseInsensitive,
    Ignored,
}

/// Response quirks, fixed for one scenario.
#[derive(Debug, Clone)]
pub(crate) struct Quirks {
    /// List items omit `runnerGroupId`.
    pub(crate) omit_group: bool,
    /// List items carry only id and name (like the official fixtures).
    pub(crate) thin_items: bool,
    pub(crate) name_filter: NameFilter,
    /// 409 session conflicts name the owner (the older message text).
    pub(crate) conflict_names_owner: bool,
    /// GHES without custom labels: only the name survives as a label.
    pub(crate) drops_custom_labels: bool,
    /// Lists ignore the `runnerGroupId` filter and return every group.
    pub(crate) ignore_group_filter: bool,
    /// Lists lag: scale sets created during the test are not listed yet.
    pub(crate) lists_lag: bool,
    /// Reads by id omit `runnerGroupId` too.
    pub(crate) by_id_omits_group: bool,
    /// Names are unique per group ignoring case, so creating `ci` beside `CI` is `Exists`.
    pub(crate) unique_ignoring_case: bool,
}

/// An injected failure of one call.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum Fault {
    #[default]
    None,
    /// 5xx before the call had any effect.
    TransientBefore,
    /// 5xx after the call took effect (a POST that timed out but succeeded).
    TransientAfter,
}

/// What the competitor does before the next command is executed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum Competitor {
    #[default]
    Idle,
    /// Creates a scale set named `name` in `group`, with a foreign owner label or none.
    Create {
        name: &'static str,
        group: u64,
        foreign_label: bool,
    },
    /// Deletes every scale set named exactly `name`.
    Delete { name: &'static str },
    /// Opens a session on every scale set named `name` that has none.
    HoldSession { name: &'static str },
    /// Ends every session it holds.
    Release,
    /// Another controller adds its owner label to every scale set named `name`.
    Claim { name: &'static str },
    /// Another controller removes its owner label from every scale set named `name`.
    Unclaim { name: &'static str },
}

pub(crate) const COMPETITOR_OWNER: &str = "arc-listener-7f9c";
pub(crate) const FOREIGN_LABEL: &str = "scaleset-owner-ffffeeeedddd";

/// The model.
#[derive(Debug, Clone)]
pub(crate) struct GitHub {
    pub(crate) sets: BTreeMap<i64, Record>,
    pub(crate) sessions: BTreeMap<i64, Session>,
    pub(crate) quirks: Quirks,
    next_id: i64,
    next_session: u64,
}

impl GitHub {
    pub(crate) fn new(quirks: Quirks) -> Self {
        Self {
            sets: BTreeMap::new(),
            sessions: BTreeMap::new(),
            quirks,
            next_id: 100,
            next_session: 1,
        }
    }

    /// Adds a scale set and returns its id.
    pub(crate) fn insert(&mut self, record: Record) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.sets.insert(id, record);
        id
    }

    pub(crate) fn open(&mut self, id: i64, owner: &str, by_probe: bool) -> String {
        let session = format!("session-{}", self.next_session);
        self.next_session += 1;
        self.sessions.insert(
            id,
            Session {
                id: session.clone(),
                owner: owner.to_owned(),
                by_probe,
            },
        );
        session
    }

    /// The foreign owner label on scale set `id`, if it carries one.
    pub(crate) fn claimed(&self, id: i64) -> bool {
        self.sets
            .get(&id)
            .is_some_and(|r| r.labels.iter().any(|l| l == FOREIGN_LABEL))
    }

    pub(crate) fn compete(&mut self, action: Competitor) {
        match action {
            Competitor::Idle => {}
            Competitor::Create {
                name,
                group,
                foreign_label,
            } => {
                let taken = self
                    .sets
                    .values()
                    .any(|r| r.name == name && r.group == group);
                if !taken {
                    let mut labels = vec![name.to_owned()];
                    if foreign_label {
                        labels.push(FOREIGN_LABEL.to_owned());
                    }
                    self.insert(Record {
                        name: name.to_owned(),
                        group,
                        labels,
                        disable_update: false,
                        creator: Creator::Competitor,
                        ours: false,
                    });
                }
            }
            Competitor::Delete { name } => {
                let doomed: Vec<i64> = self
                    .sets
                    .iter()
                    .filter(|(_, r)| r.name == name)
                    .map(|(id, _)| *id)
                    .collect();
                for id in doomed {
                    self.sets.remove(&id);
                    self.sessions.remove(&id);
                }
            }
            Competitor::HoldSession { name } => {
                let free: Vec<i64> = self
                    .sets
                    .iter()
                    .filter(|(id, r)| r.name == name && !self.sessions.contains_key(id))
                    .map(|(id, _)| *id)
                    .collect();
                for id in free {
                    self.open(id, COMPETITOR_OWNER, false);
                }
            }
            Competitor::Release => self.sessions.retain(|_, s| s.owner != COMPETITOR_OWNER),
            Competitor::Claim { name } => {
                for record in self.sets.values_mut().filter(|r| r.name == name) {
                    if !record.labels.iter().any(|l| l == FOREIGN_LABEL) {
                        record.labels.push(FOREIGN_LABEL.to_owned());
                    }
                }
            }
            Competitor::Unclaim { name } => {
                for record in self.sets.values_mut().filter(|r| r.name == name) {
                    record.labels.retain(|l| l != FOREIGN_LABEL);
                }
            }
        }
    }

    /// Executes one command with an optional injected fault.
    pub(crate) fn execute(&mut self, command: &Command, fault: Fault) -> Fact {
        if matches!(fault, Fault::TransientBefore) {
            return transient();
        }
        let fact = self.apply(command);
        if matches!(fault, Fault::TransientAfter) {
            transient()
        } else {
            fact
        }
    }

    fn apply(&mut self, command: &Command) -> Fact {
        match command {
            Command::GetById { id } => match self.sets.get(&id.0) {
                Some(record) => {
                    let mut set = full(id.0, record);
                    if self.quirks.by_id_omits_group {
                        set.runner_group_id = None;
                    }
                    Fact::ScaleSet(set)
                }
                None => Fact::NotFound,
            },
            Command::ListByName { group, name } => {
                let filter = self.quirks.name_filter;
                Fact::ScaleSets(self.list(group.0, |n| match filter {
                    NameFilter::Exact => n == name,
                    NameFilter::CaseInsensitive => n.to_lowercase() == name.to_lowercase(),
                    NameFilter::Ignored => true,
                }))
            }
            Command::ListGroup { group } => Fact::ScaleSets(self.list(group.0, |_| true)),
            Command::Create(spec) => {
                let group = spec.runner_group_id.0;
                let same = |r: &Record| {
                    r.name == spec.name
                        || (self.quirks.unique_ignoring_case
                            && r.name.to_lowercase() == spec.name.to_lowercase())
                };
                if self.sets.values().any(|r| r.group == group && same(r)) {
                    return Fact::Exists;
                }
                let labels = self.kept_labels(&spec.name, &spec.labels);
                let record = Record {
                    name: spec.name.clone(),
                    group,
                    labels,
                    disable_update: spec.disable_update,
                    creator: Creator::Us,
                    ours: true,
                };
                let id = self.insert(record);
                Fact::ScaleSet(full(id, &self.sets[&id]))
            }
            Command::OpenSession { id, owner } => {
                if !self.sets.contains_key(&id.0) {
                    return Fact::NotFound;
                }
                if let Some(held) = self.sessions.get(&id.0) {
                    let owner = self.quirks.conflict_names_owner.then(|| held.owner.clone());
                    return Fact::Conflict { owner };
                }
                Fact::Opened(SessionId(self.open(id.0, owner, true)))
            }
            Command::CloseSession { id, session } => match self.sessions.get(&id.0) {
                Some(held) if held.id == session.0 => {
                    self.sessions.remove(&id.0);
                    Fact::Closed
                }
                _ => Fact::NotFound,
            },
            Command::Update { id, patch } => {
                let (labels, name) = match self.sets.get(&id.0) {
                    Some(record) => (
                        self.kept_labels(&record.name, &patch.labels),
                        record.name.clone(),
                    ),
                    None => return Fact::NotFound,
                };
                let group = patch.runner_group_id.0;
                let taken = self
                    .sets
                    .iter()
                    .any(|(other, r)| *other != id.0 && r.group == group && r.name == name);
                if taken {
                    return Fact::BadRequest {
                        exception: "RunnerScaleSetExistsException".into(),
                        message: format!("{name} exists in runner group {group}"),
                    };
                }
                if let Some(record) = self.sets.get_mut(&id.0) {
                    record.labels = labels;
                    record.disable_update = patch.disable_update;
                    record.group = group;
                }
                Fact::Updated
            }
            other => Fact::BadRequest {
                exception: "ModelException".into(),
                message: format!("{other:?}"),
            },
        }
    }

    fn kept_labels(&self, name: &str, labels: &[String]) -> Vec<String> {
        if self.quirks.drops_custom_labels {
            vec![name.to_owned()]
        } else {
            labels.to_vec()
        }
    }

    fn list(&self, group: u64, name_matches: impl Fn(&str) -> bool) -> Vec<ScaleSet> {
        self.sets
            .iter()
            .filter(|(_, r)| r.group == group || self.quirks.ignore_group_filter)
            .filter(|(_, r)| name_matches(&r.name))
            .filter(|(_, r)| !self.quirks.lists_lag || r.creator == Creator::Preexisting)
            .map(|(id, r)| {
                let mut item = full(*id, r);
                if self.quirks.omit_group {
                    item.runner_group_id = None;
                }
                if self.quirks.thin_items {
                    item.labels.clear();
                    item.disable_update = false;
                }
                item
            })
            .collect()
    }
}

fn full(id: i64, record: &Record) -> ScaleSet {
    ScaleSet {
        id: GithubScaleSetId(id),
        name: record.name.clone(),
        runner_group_id: Some(RunnerGroupId(record.group)),
        labels: record.labels.clone(),
        disable_update: record.disable_update,
    }
}

fn transient() -> Fact {
    Fact::Transient {
        message: "502 after the client's retries".into(),
    }
}
