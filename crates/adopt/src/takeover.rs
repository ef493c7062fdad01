//! A takeover note: the operator imported this scale set from another manager (GARM), which
//! ran it under a known GitHub id. The note is evidence of ownership for that one scale set
//! (`Evidence::ImportedFrom`), and it names the session owner the old manager listens under,
//! so that a session conflict naming it is refused with the remedy "stop it first"
//! ([`Takeover::conflict`], beside the refusal it makes in `refusal.rs`: this module is read by
//! `input`, which `refusal` reaches through `settings`, so it cannot name `Refusal`).

use crate::scale_set::{GithubScaleSetId, ScaleSet};

/// Where an imported scale set came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Takeover {
    /// The old manager's controller id (GARM's `controller_id`).
    pub controller_id: String,
    /// The GitHub scale-set id it ran the set under.
    pub github_id: GithubScaleSetId,
    /// The pool id the old manager tagged the set's provider instances with (GARM's
    /// `<scale set name>-<entity id>`), when known. The machine does not read it: the
    /// controller lists the old manager's instances under it, to take over the running ones.
    #[cfg_attr(feature = "serde", serde(default))]
    pub pool_id: Option<String>,
    /// The old manager's runner-name prefix for the set (GARM's `runner_prefix`, `garm` by
    /// default), when known: its runners on GitHub are recognised by it. Not read by the
    /// machine either.
    #[cfg_attr(feature = "serde", serde(default))]
    pub runner_prefix: Option<String>,
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
}
