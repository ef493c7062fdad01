//! A takeover note: the operator imported this scale set from another manager (GARM), which
//! ran it under a known GitHub id. The note is evidence of ownership for that one scale set
//! (`Evidence::ImportedFrom`), and it names the session owner the old manager listens under,
//! so that a session conflict naming it is refused with the remedy "stop it first".

use crate::refusal::Refusal;
use crate::scale_set::{ScaleSet, ScaleSetId};

/// Where an imported scale set came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Takeover {
    /// The old manager's controller id (GARM's `controller_id`).
    pub controller_id: String,
    /// The GitHub scale-set id it ran the set under.
    pub github_id: ScaleSetId,
}

impl Takeover {
    /// The owner name GARM opens its message sessions under: `garm-<controller id>`.
    pub fn session_owner(&self) -> String {
        format!("garm-{}", self.controller_id)
    }

    /// Whether the note vouches for `set` as the scale set named `name`: its GitHub id AND
    /// its name must both be the imported ones (a recycled id under another name, or a
    /// same-name set under another id, is not what was imported).
    pub fn vouches_for(&self, set: &ScaleSet, name: &str) -> bool {
        set.id == self.github_id && set.name == name
    }

    /// A session conflict on `set` held by `owner`: the old manager's owner means it still
    /// runs, refused with the remedy to stop it (never a reason to delete anything). Any other
    /// owner is not this note's business (`None`).
    pub fn conflict(&self, set: &ScaleSet, owner: &str) -> Option<Refusal> {
        (owner == self.session_owner()).then(|| Refusal::ImportedStillRunning {
            scale_set: set.to_ref(),
            owner: owner.to_owned(),
        })
    }
}
