//! What the machine knows about scale sets on GitHub: identifiers and the observed record.

use std::fmt;

/// A scale set's id as GitHub assigned it (the `id` field of a `RunnerScaleSet`): the one
/// type the client, this machine and the store share, from `scaleset-domain`.
pub use scaleset_domain::GithubScaleSetId;

/// A runner group's id (`runnerGroupId`; the default group is 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct RunnerGroupId(pub u64);

impl fmt::Display for RunnerGroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A message session's id (`sessionId`, a UUID string).
///
/// Only the id travels through the machine: the driver keeps the full session (queue URL and
/// access token) itself, so no secret ever enters a [`Command`](crate::Command) or an
/// [`Outcome`](crate::Outcome).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct SessionId(pub String);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A scale set as one GitHub response showed it.
///
/// Every field but `id` and `name` may be missing from a list response; the driver fills what
/// it got. `runner_group_id` is `None` when the response omitted `runnerGroupId`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ScaleSet {
    /// GitHub's id.
    pub id: GithubScaleSetId,
    /// The name, exactly as GitHub returned it.
    pub name: String,
    /// The runner group, or `None` when the response omitted it.
    pub runner_group_id: Option<RunnerGroupId>,
    /// Label names (the `name` of each label), as returned.
    pub labels: Vec<String>,
    /// `runnerSetting.disableUpdate` (missing means `false`).
    pub disable_update: bool,
}

impl ScaleSet {
    /// Whether this record carries what adoption judges (labels and `runnerGroupId`), so a
    /// list item needs no re-read by id. The real service lists full records; an item with
    /// no labels at all is taken as a thin one (as in the official fixtures) and re-read.
    pub fn is_complete(&self) -> bool {
        self.runner_group_id.is_some() && !self.labels.is_empty()
    }

    /// A short reference to this scale set for refusals and logs.
    pub fn to_ref(&self) -> ScaleSetRef {
        ScaleSetRef {
            id: self.id,
            name: self.name.clone(),
            runner_group_id: self.runner_group_id,
        }
    }
}

/// Identifies a scale set seen on GitHub in a refusal or a retry reason: id, name and group
/// (`None` when GitHub's response omitted the group).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ScaleSetRef {
    /// GitHub's id.
    pub id: GithubScaleSetId,
    /// The name as GitHub returned it.
    pub name: String,
    /// The runner group, when GitHub returned one.
    pub runner_group_id: Option<RunnerGroupId>,
}

impl fmt::Display for ScaleSetRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.runner_group_id {
            Some(group) => write!(
                f,
                "scale set {} {:?} in runner group {group}",
                self.id, self.name
            ),
            None => write!(
                f,
                "scale set {} {:?} (runner group not returned)",
                self.id, self.name
            ),
        }
    }
}
