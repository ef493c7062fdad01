//! The scale-set settings the machine compares before adopting (rule 7): the label set and
//! `disableUpdate`, normalised so that order, case and duplicates do not count.

use std::collections::BTreeSet;
use std::fmt;

use crate::identity::Identity;
use crate::input::Desired;
use crate::scale_set::ScaleSet;

/// Normalised settings: labels lower-cased, de-duplicated and sorted, owner labels removed.
///
/// The desired label set always contains the scale-set name: GitHub uses the name as the
/// default `runs-on` label, and [`Command::Create`](crate::Command::Create) always sends it, so
/// a scale set found without its own name as a label has drifted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Settings {
    /// Labels, lower-cased, sorted, without duplicates and without owner labels.
    pub labels: Vec<String>,
    /// `runnerSetting.disableUpdate`.
    pub disable_update: bool,
}

impl Settings {
    /// What the configuration asks for: the name, the configured labels and `disable_update`.
    pub fn desired(desired: &Desired, identity: &Identity) -> Self {
        let labels =
            std::iter::once(desired.name.as_str()).chain(desired.labels.iter().map(String::as_str));
        Self {
            labels: normalise(labels, identity),
            disable_update: desired.disable_update,
        }
    }

    /// What GitHub shows for `set`.
    pub fn observed(set: &ScaleSet, identity: &Identity) -> Self {
        Self {
            labels: normalise(set.labels.iter().map(String::as_str), identity),
            disable_update: set.disable_update,
        }
    }

    /// Labels in `self` that `other` lacks.
    pub fn labels_missing_from(&self, other: &Self) -> Vec<String> {
        self.labels
            .iter()
            .filter(|label| !other.labels.contains(label))
            .cloned()
            .collect()
    }
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "labels [{}], disableUpdate {}",
            self.labels.join(", "),
            self.disable_update
        )
    }
}

/// Lower-cases, drops owner labels, de-duplicates and sorts.
fn normalise<'a>(labels: impl Iterator<Item = &'a str>, identity: &Identity) -> Vec<String> {
    labels
        .filter(|label| !identity.is_owner_label(label))
        .map(str::to_lowercase)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}
