//! The deletion planner: whether deleting a scale set deletes its GitHub scale set too is
//! decided here, from the stored provenance, and nowhere else (the API's delete route only
//! carries it out, through [`crate::delete_on_github`]). Pure: no I/O, no clock.
//!
//! The rule (docs/adoption.md, "Deleting"): a scale set whose record holds a [`Creation`]
//! (made only from the adoption machine's `DeletePermit`, on the create path) is deleted on
//! GitHub; an adopted or merely known one is detached (the record removed, GitHub untouched)
//! unless the operator forces it; one never ensured has nothing on GitHub. The one GitHub
//! delete, [`crate::delete_on_github`], needs the [`GitHubDeletion`] only [`plan_deletion`]
//! makes, and reads GitHub's answer through [`already_gone`].

use std::fmt;

use scaleset_store::{Evidence, Provenance, ScaleSet};

/// What deleting a scale set does on GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    /// The GitHub scale set is deleted too.
    OnGitHub(GitHubDeletion),
    /// Only the record goes; the GitHub scale set (if any) is left in place.
    Detach(Detachment),
}

/// Leave to delete one GitHub scale set; only [`plan_deletion`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitHubDeletion {
    github_id: i64,
    /// `None`: this controller created it; otherwise the provenance the operator overrode.
    forced_over: Option<Provenance>,
}

impl GitHubDeletion {
    /// The GitHub scale set to delete.
    pub fn github_id(&self) -> i64 {
        self.github_id
    }

    /// Whether the operator forced it (the scale set was not created by this controller).
    pub fn is_forced(&self) -> bool {
        self.forced_over.is_some()
    }
}

/// Why a deletion leaves GitHub alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detachment {
    /// Never ensured (or refused before it was ours): nothing of ours on GitHub.
    NeverEnsured,
    /// Adopted: GitHub had it before this database knew it.
    Adopted {
        /// The GitHub scale set left in place.
        github_id: i64,
        /// The evidence the last ensure saw.
        evidence: Vec<Evidence>,
    },
    /// The stored id was confirmed, but no record says how it became ours.
    Known {
        /// The GitHub scale set left in place.
        github_id: i64,
    },
}

impl Deletion {
    /// Whether the GitHub scale set is deleted too.
    pub fn deletes_on_github(&self) -> bool {
        matches!(self, Self::OnGitHub(_))
    }
}

/// Decides what deleting `scale_set` does on GitHub, from its stored provenance: created by
/// this controller (its record holds a [`scaleset_store::Creation`] of the stored GitHub id) →
/// deleted on GitHub; adopted or known → detached unless `force`; never ensured → detached.
pub fn plan_deletion(scale_set: &ScaleSet, force: bool) -> Deletion {
    let Some(github_id) = scale_set.github_id else {
        return Deletion::Detach(Detachment::NeverEnsured);
    };
    match &scale_set.provenance {
        Some(Provenance::Created(creation)) if creation.github_id() == github_id => {
            Deletion::OnGitHub(GitHubDeletion {
                github_id,
                forced_over: None,
            })
        }
        other if force => Deletion::OnGitHub(GitHubDeletion {
            github_id,
            forced_over: Some(other.clone().unwrap_or(Provenance::Known)),
        }),
        Some(Provenance::Adopted) => Deletion::Detach(Detachment::Adopted {
            github_id,
            evidence: scale_set.evidence.clone(),
        }),
        // Known, none recorded, or the creation of another GitHub scale set than this one.
        Some(Provenance::Known | Provenance::Created(_)) | None => {
            Deletion::Detach(Detachment::Known { github_id })
        }
    }
}

/// Whether GitHub's refusal of a scale-set delete says it is gone already
/// (`RunnerScaleSetNotFoundException`, or a 404 on the scale set's own URL): the goal holds,
/// so the delete counts as done. Any other failure is one.
pub(crate) fn already_gone(error: &scaleset_github::Error) -> bool {
    error.is_scale_set_not_found() || error.status() == Some(404)
}

fn evidence_words(evidence: &[Evidence]) -> String {
    if evidence.is_empty() {
        return "policy alone (no evidence)".to_owned();
    }
    let words: Vec<&str> = evidence
        .iter()
        .map(|e| match e {
            Evidence::CreatedThisRun => "created by this run",
            Evidence::StoredId => "stored id",
            Evidence::OwnerLabel => "owner label",
            Evidence::OwnSession => "our own stale session",
            Evidence::ImportedFrom => "imported from GARM",
            _ => "evidence this version does not name",
        })
        .collect();
    words.join(", ")
}

impl fmt::Display for Deletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OnGitHub(GitHubDeletion {
                github_id,
                forced_over: None,
            }) => write!(
                f,
                "GitHub scale set {github_id} is deleted too: this controller created it"
            ),
            Self::OnGitHub(GitHubDeletion {
                github_id,
                forced_over: Some(provenance),
            }) => write!(
                f,
                "GitHub scale set {github_id} is deleted too, as forced: it was {provenance}, \
                 not created by this controller"
            ),
            Self::Detach(Detachment::NeverEnsured) => {
                f.write_str("it was never ensured on GitHub: only the record is removed")
            }
            Self::Detach(Detachment::Adopted {
                github_id,
                evidence,
            }) => write!(
                f,
                "GitHub scale set {github_id} is left in place: it was adopted on {}, and this \
                 database holds no record that this controller created it (after a database \
                 loss even our own scale sets are adopted by their owner label); --force \
                 deletes it on GitHub",
                evidence_words(evidence)
            ),
            Self::Detach(Detachment::Known { github_id }) => write!(
                f,
                "GitHub scale set {github_id} is left in place: its stored id was confirmed, \
                 but this database holds no record of how it became ours; --force deletes it \
                 on GitHub"
            ),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
