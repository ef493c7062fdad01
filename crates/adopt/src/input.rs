//! What one ensure run starts from: the desired scale set, the stored GitHub id, the adoption
//! policy, the controller identity and the retry bounds.

use crate::retry::RetryBounds;
use crate::scale_set::{RunnerGroupId, ScaleSetId};

/// Prefix of every scaleset owner label; a label with this prefix that is not ours is another
/// controller's ownership claim (evidence against adoption).
pub const OWNER_LABEL_PREFIX: &str = "scaleset-owner-";

/// Everything one run of the machine needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Input {
    /// The scale set the configuration asks for.
    pub desired: Desired,
    /// The GitHub id the store holds for this scale set, if any.
    pub known_id: Option<ScaleSetId>,
    /// When a same-name scale set we hold no record of may be adopted.
    pub policy: Policy,
    /// Whether drifted settings are patched (`true`) or refused (`false`).
    pub repair: bool,
    /// Who we are on GitHub.
    pub identity: Identity,
    /// Which attempt this is and how retries back off.
    pub retry: RetryBounds,
}

/// The desired scale set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Desired {
    /// Scale-set name; matched exactly (case-sensitive) against GitHub.
    pub name: String,
    /// Runner group id (1 is the default group).
    pub runner_group_id: RunnerGroupId,
    /// Extra labels; the name is always a label too (see [`Settings`](crate::Settings)).
    pub labels: Vec<String>,
    /// `runnerSetting.disableUpdate`.
    pub disable_update: bool,
}

/// Adoption policy for a same-name scale set that the store has no id for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Policy {
    /// Never adopt: such a scale set is refused (`ScaleSetExists`).
    Never,
    /// Adopt only on evidence that it is ours (the default).
    #[default]
    Owned,
    /// Adopt unless there is evidence of a live foreign owner (explicit operator choice).
    Any,
}

/// The controller identity on GitHub (DESIGN §3), derived from the controller id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Identity {
    /// The controller id (a UUID string).
    pub controller_id: String,
    /// `ownerName` of every message session we open: `scaleset-<controller id>`. A session
    /// conflict naming it is our own stale session, which is evidence of ownership.
    pub session_owner: String,
    /// `ownerName` of ownership probes under [`Policy::Owned`]: `scaleset-<controller id>-probe`.
    /// A probe session is never handed over, and a leaked probe must not later read as our own
    /// stale session, so it carries a name that is never evidence.
    pub probe_owner: String,
    /// The owner label added at create and read back as evidence, or `None` when the operator
    /// turned owner labels off.
    pub owner_label: Option<String>,
}

impl Identity {
    /// Derives the identity from a controller id, with the owner label on:
    /// `scaleset-owner-<first 12 hex digits of the controller id>`.
    ///
    /// ```
    /// let id = scaleset_adopt::Identity::from_controller_id("3F2A9C1E-77B0-4d4e-9a55-0123456789ab");
    /// assert_eq!(id.session_owner, "scaleset-3F2A9C1E-77B0-4d4e-9a55-0123456789ab");
    /// assert_eq!(id.owner_label.as_deref(), Some("scaleset-owner-3f2a9c1e77b0"));
    /// ```
    pub fn from_controller_id(controller_id: &str) -> Self {
        let hex: String = controller_id
            .chars()
            .filter(char::is_ascii_hexdigit)
            .take(12)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Self {
            controller_id: controller_id.to_owned(),
            session_owner: format!("scaleset-{controller_id}"),
            probe_owner: format!("scaleset-{controller_id}-probe"),
            owner_label: Some(format!("{OWNER_LABEL_PREFIX}{hex}")),
        }
    }

    /// Whether `label` is our owner label (case-insensitive).
    pub fn is_our_owner_label(&self, label: &str) -> bool {
        self.owner_label
            .as_deref()
            .is_some_and(|ours| ours.eq_ignore_ascii_case(label))
    }

    /// Whether `label` is any owner label: ours, or one carrying [`OWNER_LABEL_PREFIX`].
    pub fn is_owner_label(&self, label: &str) -> bool {
        self.is_our_owner_label(label) || has_owner_prefix(label)
    }

    /// Whether `label` is another controller's owner label.
    pub fn is_foreign_owner_label(&self, label: &str) -> bool {
        has_owner_prefix(label) && !self.is_our_owner_label(label)
    }
}

fn has_owner_prefix(label: &str) -> bool {
    label
        .get(..OWNER_LABEL_PREFIX.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(OWNER_LABEL_PREFIX))
}
