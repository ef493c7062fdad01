//! What one ensure run starts from: the desired scale set, the stored GitHub id, the adoption
//! policy, the controller identity and the retry bounds.

use crate::identity::Identity;
use crate::retry::RetryBounds;
use crate::scale_set::{GithubScaleSetId, RunnerGroupId, ScaleSet};
use crate::takeover::Takeover;

/// Everything one run of the machine needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Input {
    /// The scale set the configuration asks for.
    pub desired: Desired,
    /// The GitHub id the store holds for this scale set, if any.
    pub known_id: Option<GithubScaleSetId>,
    /// When a same-name scale set we hold no record of may be adopted.
    pub policy: Policy,
    /// Whether drifted settings of a scale set found by name are patched (`true`) or refused
    /// (`false`). A scale set known by its stored id is always patched to the configuration.
    pub repair: bool,
    /// Under [`Policy::Owned`], open a probe session when nothing else proves a found scale set
    /// ours (off by default). Only a session conflict naming our session owner (a listener's)
    /// is evidence, and today's GitHub names no owner in that conflict, so the probe mostly
    /// opens a session on a scale set not proven ours. Policy `any` always probes: it must see
    /// a foreign listener before adopting. Every probe runs under
    /// [`Identity::probe_owner`](crate::Identity::probe_owner), which is never evidence.
    /// Absent in serialised input: off.
    #[cfg_attr(feature = "serde", serde(default))]
    pub probe: bool,
    /// Who we are on GitHub.
    pub identity: Identity,
    /// Which attempt this is and how retries back off.
    pub retry: RetryBounds,
    /// The takeover note of a scale set imported from another manager (GARM): evidence for
    /// the set with its id and name. Absent in serialised input: none.
    #[cfg_attr(feature = "serde", serde(default))]
    pub takeover: Option<Takeover>,
    /// Whether the message session of an imported scale set is not ours yet (the old manager
    /// may still run it): then nothing is written to a set the takeover note vouches for (no
    /// owner label, no patch); the run ends ready with
    /// [`Notice::WritesAwaitSession`](crate::Notice::WritesAwaitSession) saying what waits, and
    /// the driver runs the machine again with this off once its session is ours. Absent in
    /// serialised input: off.
    #[cfg_attr(feature = "serde", serde(default))]
    pub await_session: bool,
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

impl Desired {
    /// Whether `set` is the desired scale set by name (exactly) and runner group (a group the
    /// response omitted counts as the desired one).
    pub fn admits(&self, set: &ScaleSet) -> bool {
        set.name == self.name
            && set
                .runner_group_id
                .is_none_or(|group| group == self.runner_group_id)
    }
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
