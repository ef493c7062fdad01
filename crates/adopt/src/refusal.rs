//! Refusals: every reason the machine will not use a scale set, with the details an operator
//! needs and a remediation sentence.

use std::fmt;

use crate::scale_set::{GithubScaleSetId, RunnerGroupId, ScaleSet, ScaleSetRef};
use crate::settings::Settings;
use crate::takeover::Takeover;

/// Why the machine refused. Refusals are final for this configuration: retrying will not
/// change them until the operator (or the other owner) acts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Refusal {
    /// The stored GitHub id does not name the desired scale set: under that id GitHub has a
    /// different name or group (rule 1), or the same-name set has another id (rule 3).
    KnownIdConflict {
        /// The id the store holds.
        stored: GithubScaleSetId,
        /// What GitHub showed: the set under the stored id, or the same-name set found.
        github: ScaleSetRef,
        /// The desired name.
        desired_name: String,
        /// The desired runner group.
        desired_group: RunnerGroupId,
    },
    /// No exact match, but scale sets whose names differ from the desired one only in case.
    NameCaseCollision {
        /// The desired name.
        desired_name: String,
        /// The runner group queried.
        desired_group: RunnerGroupId,
        /// The scale sets whose names differ only in case.
        existing: Vec<ScaleSetRef>,
    },
    /// A set with the exact name came back with a populated, different runner group.
    GroupMismatch {
        /// The desired name.
        desired_name: String,
        /// The runner group queried.
        desired_group: RunnerGroupId,
        /// The same-name sets in other groups.
        found: Vec<ScaleSetRef>,
    },
    /// Two or more scale sets match the name in the group.
    Ambiguous {
        /// The desired name.
        desired_name: String,
        /// The runner group queried.
        desired_group: RunnerGroupId,
        /// Every match.
        matches: Vec<ScaleSetRef>,
    },
    /// The scale set carries another controller's owner label.
    ForeignOwner {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// The foreign owner labels seen.
        labels: Vec<String>,
    },
    /// Policy `never`: a same-name scale set exists and the store has no id for it.
    ScaleSetExists {
        /// The scale set found.
        scale_set: ScaleSetRef,
    },
    /// A message session held by another owner is active on the scale set.
    ForeignSession {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// The holder's owner name.
        owner: String,
    },
    /// An imported scale set's session is held by the manager it was imported from: that
    /// manager (GARM) still runs.
    ImportedStillRunning {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// The old manager's owner name (`garm-<controller id>`).
        owner: String,
    },
    /// Policy `owned`: no evidence that the scale set is ours (no stored id, no owner label of
    /// ours, no stale session of ours); the probe session opened, which proves nothing.
    OwnershipUnproven {
        /// The scale set.
        scale_set: ScaleSetRef,
    },
    /// Labels or `disableUpdate` differ and `repair` is off.
    Drifted {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// What the configuration asks for.
        ours: Settings,
        /// What GitHub has.
        theirs: Settings,
    },
    /// `repair` patched the scale set, but reading it back still shows a difference: labels
    /// GitHub dropped (GHES without custom labels), or `disableUpdate` still `true` when the
    /// configuration asks for `false` (a client may omit `false` in a PATCH and GitHub ignores
    /// zero values there, so that repair can never take).
    RepairDidNotTake {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// What the configuration asks for.
        ours: Settings,
        /// What GitHub has after the patch.
        theirs: Settings,
    },
}

impl Refusal {
    /// A stable name for the refusal (for state columns, metrics and docs).
    pub fn code(&self) -> &'static str {
        match self {
            Self::KnownIdConflict { .. } => "KnownIdConflict",
            Self::NameCaseCollision { .. } => "NameCaseCollision",
            Self::GroupMismatch { .. } => "GroupMismatch",
            Self::Ambiguous { .. } => "Ambiguous",
            Self::ForeignOwner { .. } => "ForeignOwner",
            Self::ScaleSetExists { .. } => "ScaleSetExists",
            Self::ForeignSession { .. } => "ForeignSession",
            Self::ImportedStillRunning { .. } => "ImportedStillRunning",
            Self::OwnershipUnproven { .. } => "OwnershipUnproven",
            Self::Drifted { .. } => "Drifted",
            Self::RepairDidNotTake { .. } => "RepairDidNotTake",
        }
    }

    /// What the operator can do about it, as one sentence naming the ids involved.
    pub fn remediation(&self) -> String {
        match self {
            Self::KnownIdConflict { stored, github, .. } => format!(
                "check on GitHub which scale set is this one; if GitHub's {github} is the right one, \
                 detach and re-apply so the stored id {stored} is replaced, otherwise fix the \
                 configured name or group"
            ),
            Self::NameCaseCollision {
                desired_name,
                existing,
                ..
            } => format!(
                "use the exact spelling of the existing scale set ({}) in the configuration, or \
                 choose a name that differs from it by more than case, instead of {desired_name:?}",
                refs(existing)
            ),
            Self::GroupMismatch {
                desired_group,
                found,
                ..
            } => format!(
                "GitHub reports {} outside runner group {desired_group}: correct the configured \
                 runner group, or rename one of the scale sets",
                refs(found)
            ),
            Self::Ambiguous { matches, .. } => format!(
                "delete or rename all but one of {} on GitHub, then re-apply",
                refs(matches)
            ),
            Self::ForeignOwner { scale_set, labels } => format!(
                "{scale_set} belongs to another scaleset controller (owner label {}): use another \
                 name, or remove that label on GitHub if that controller is gone for good",
                labels.join(", ")
            ),
            Self::ScaleSetExists { scale_set } => format!(
                "{scale_set} already exists and policy is `never`: set adoption policy `owned` or \
                 `any` to adopt it, or choose another name"
            ),
            Self::ForeignSession { scale_set, owner } => format!(
                "a listener named {owner:?} is serving {scale_set}: stop it, or use another name; \
                 if it is a dead listener of ours, wait for its session to expire and re-apply"
            ),
            Self::ImportedStillRunning { scale_set, owner } => format!(
                "GARM still runs: stop it first ({owner:?} holds the session of {scale_set}; \
                 stop that GARM, or wait for its session to expire after a crash), then \
                 re-apply; nothing was deleted"
            ),
            Self::OwnershipUnproven { scale_set } => format!(
                "nothing shows that {scale_set} is ours: set adoption policy `any` to adopt it \
                 anyway, or add our owner label to it on GitHub, or choose another name"
            ),
            Self::Drifted {
                scale_set,
                ours,
                theirs,
            } => format!(
                "{scale_set} has {theirs} but the configuration asks for {ours}: set `repair = true` \
                 to patch it, or change the configuration to match"
            ),
            Self::RepairDidNotTake {
                scale_set,
                ours,
                theirs,
            } => format!(
                "GitHub kept {theirs} on {scale_set} after patching it to {ours}: {}",
                repair_advice(ours, theirs)
            ),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::KnownIdConflict {
                stored,
                github,
                desired_name,
                desired_group,
            } => write!(
                f,
                "stored id {stored} conflicts with GitHub's {github} for desired {desired_name:?} \
                 in runner group {desired_group}"
            ),
            Self::NameCaseCollision {
                desired_name,
                desired_group,
                existing,
            } => write!(
                f,
                "no exact match for {desired_name:?} in runner group {desired_group}, but names \
                 differing only in case: {}",
                refs(existing)
            ),
            Self::GroupMismatch {
                desired_name,
                desired_group,
                found,
            } => write!(
                f,
                "{desired_name:?} was queried in runner group {desired_group} but GitHub returned {}",
                refs(found)
            ),
            Self::Ambiguous {
                desired_name,
                desired_group,
                matches,
            } => write!(
                f,
                "{} scale sets named {desired_name:?} in runner group {desired_group}: {}",
                matches.len(),
                refs(matches)
            ),
            Self::ForeignOwner { scale_set, labels } => {
                write!(
                    f,
                    "{scale_set} carries foreign owner label(s) {}",
                    labels.join(", ")
                )
            }
            Self::ScaleSetExists { scale_set } => {
                write!(f, "{scale_set} exists and adoption policy is never")
            }
            Self::ForeignSession { scale_set, owner } => {
                write!(f, "{scale_set} has an active session owned by {owner:?}")
            }
            Self::ImportedStillRunning { scale_set, owner } => write!(
                f,
                "{scale_set} was imported from GARM, and GARM ({owner:?}) still holds its session"
            ),
            Self::OwnershipUnproven { scale_set } => {
                write!(f, "no evidence that {scale_set} belongs to this controller")
            }
            Self::Drifted {
                scale_set,
                ours,
                theirs,
            } => {
                write!(f, "{scale_set} drifted: ours {ours}; theirs {theirs}")
            }
            Self::RepairDidNotTake {
                scale_set,
                ours,
                theirs,
            } => write!(
                f,
                "repair of {scale_set} did not take ({}): ours {ours}; theirs after patch {theirs}",
                Difference::between(ours, theirs)
            ),
        }
    }
}

/// Which of the compared settings differ.
struct Difference {
    labels: bool,
    disable_update: bool,
}

impl Difference {
    fn between(ours: &Settings, theirs: &Settings) -> Self {
        Self {
            labels: ours.labels != theirs.labels,
            disable_update: ours.disable_update != theirs.disable_update,
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self.labels, self.disable_update) {
            (true, true) => "labels and disableUpdate differ",
            (true, false) => "labels differ",
            (false, true) => "disableUpdate differs",
            (false, false) => "no difference in the read-back",
        })
    }
}

/// The remediation of [`Refusal::RepairDidNotTake`]: one clause per setting that still
/// differs.
fn repair_advice(ours: &Settings, theirs: &Settings) -> String {
    let difference = Difference::between(ours, theirs);
    let mut advice = Vec::new();
    if difference.labels {
        let dropped = ours.labels_missing_from(theirs);
        let extra = theirs.labels_missing_from(ours);
        let mut which = Vec::new();
        if !dropped.is_empty() {
            which.push(format!("GitHub lacks [{}]", dropped.join(", ")));
        }
        if !extra.is_empty() {
            which.push(format!("GitHub has extra [{}]", extra.join(", ")));
        }
        advice.push(format!(
            "the labels still differ ({}); GHES without custom labels drops extra labels, so \
             reduce the labels to the name or enable \
             DistributedTask.AllowRunnerScaleSetCustomLabels",
            which.join("; ")
        ));
    }
    if difference.disable_update {
        advice.push(if ours.disable_update {
            "disableUpdate is still false although the patch set it to true: check that the \
             GitHub account may update the scale set, or set `disable_update = false` in the \
             configuration to match"
                .to_owned()
        } else {
            "disableUpdate is still true and a repair cannot turn it off (a client may omit \
             `disableUpdate: false` from the PATCH, and GitHub ignores zero values there): set \
             `disable_update = true` in the configuration to match, or delete the scale set on \
             GitHub and re-apply so it is recreated with disableUpdate false"
                .to_owned()
        });
    }
    if advice.is_empty() {
        // The machine only refuses on a difference; keep a sentence for hand-built values.
        advice.push(
            "re-apply; if it recurs, compare the scale set on GitHub with the configuration"
                .to_owned(),
        );
    }
    advice.join("; also, ")
}

fn refs(sets: &[ScaleSetRef]) -> String {
    sets.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl Takeover {
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
