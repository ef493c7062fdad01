//! Outcomes: how a run ends (ready, refused, failed, retry later), the evidence behind a
//! ready scale set, and the only permission rollback has to delete one.

use std::fmt;
use std::time::Duration;

use crate::command_kind::CommandKind;
use crate::refusal::Refusal;
use crate::scale_set::{GithubScaleSetId, RunnerGroupId, ScaleSetRef, SessionId};
use crate::settings::Settings;

/// How a run of the machine ended.
///
/// With the `serde` feature it serialises, but never deserialises: a ready outcome may carry a
/// [`DeletePermit`], which only the machine makes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum Outcome {
    /// The scale set is ours to use.
    Ready {
        /// GitHub's id; store it.
        id: GithubScaleSetId,
        /// How we came to hold it.
        provenance: Provenance,
        /// Ownership evidence seen (empty only for an adoption under policy `any`).
        evidence: Vec<Evidence>,
        /// Under policy `any`, the session the ownership probe opened (under the probe owner),
        /// handed over to the caller (the driver kept the full session with its token) so no
        /// call is wasted.
        session: Option<SessionId>,
        /// The stored id was gone on GitHub (dormancy): discard the stored message cursor.
        reset_cursor: bool,
        /// Whether a rollback of the surrounding operation may delete this scale set.
        rollback: Rollback,
        /// What the run changed or noticed on the way (a spec applied, an owner label GitHub
        /// dropped): the driver records each as an event, a warning where it says so.
        notices: Vec<Notice>,
    },
    /// The machine will not use any scale set for this configuration.
    Refused {
        /// Why, with details and a remediation.
        reason: Refusal,
    },
    /// GitHub rejected a request as invalid, or retries ran out.
    Failed {
        /// Why.
        reason: Failure,
    },
    /// Run the machine again (from rule 1, with `attempt + 1`) after waiting `after`.
    Retry {
        /// Backoff hint computed from the attempt number and the retry bounds.
        after: Duration,
        /// Why.
        reason: RetryReason,
    },
}

impl Outcome {
    /// The scale set's id when the outcome is [`Outcome::Ready`].
    pub fn ready_id(&self) -> Option<GithubScaleSetId> {
        match self {
            Self::Ready { id, .. } => Some(*id),
            Self::Refused { .. } | Self::Failed { .. } | Self::Retry { .. } => None,
        }
    }

    /// The delete permit, present only for a scale set created by this run.
    pub fn delete_permit(&self) -> Option<&DeletePermit> {
        match self {
            Self::Ready { rollback, .. } => rollback.permit(),
            Self::Refused { .. } | Self::Failed { .. } | Self::Retry { .. } => None,
        }
    }

    /// The refusal, when the outcome is [`Outcome::Refused`].
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Self::Refused { reason } => Some(reason),
            Self::Ready { .. } | Self::Failed { .. } | Self::Retry { .. } => None,
        }
    }
}

/// Something a ready run did or saw that the operator should hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Notice {
    /// The scale set's settings were patched to the configuration (a known scale set whose
    /// configuration changed, or a repair): an event.
    SpecApplied {
        /// The scale set after the patch.
        scale_set: ScaleSetRef,
        /// Its settings before.
        before: Settings,
        /// Its settings now.
        after: Settings,
        /// The runner group it was moved from, when the group changed.
        moved_from: Option<RunnerGroupId>,
        /// Our owner label, when the patch added it (the settings above leave it out).
        #[cfg_attr(feature = "serde", serde(default))]
        label_added: Option<String>,
    },
    /// An imported scale set whose message session is not ours yet: nothing was written to
    /// it; what waits for the session is named (an event).
    WritesAwaitSession {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// Our owner label, when it is still to be added.
        label: Option<String>,
        /// Our settings and GitHub's, when they differ (ours first).
        settings: Option<(Settings, Settings)>,
    },
    /// A known scale set kept other settings after the PATCH (e.g. GHES without custom labels
    /// drops extra labels). It is ours and stays served: a warning.
    SpecNotApplied {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// What the configuration asks for.
        ours: Settings,
        /// What GitHub kept.
        theirs: Settings,
    },
    /// After create or repair, GitHub does not show our owner label (some GHES versions drop
    /// custom labels): a warning. After a database loss the scale set cannot be proven ours by
    /// its label.
    OwnerLabelMissing {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// The label we sent.
        label: String,
    },
}

impl Notice {
    /// Whether the operator should look (a warning) rather than just read it (an event).
    pub fn is_warning(&self) -> bool {
        match self {
            Self::SpecApplied { .. } | Self::WritesAwaitSession { .. } => false,
            Self::SpecNotApplied { .. } | Self::OwnerLabelMissing { .. } => true,
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SpecApplied {
                scale_set,
                before,
                after,
                moved_from,
                label_added,
            } => {
                if before == after
                    && moved_from.is_none()
                    && let Some(label) = label_added
                {
                    return write!(
                        f,
                        "added our owner label {label} to {scale_set} (its settings were already \
                         as configured: {after})"
                    );
                }
                write!(f, "patched {scale_set} from {before} to {after}")?;
                if let Some(group) = moved_from {
                    write!(f, ", moved from runner group {group}")?;
                }
                match label_added {
                    Some(label) => write!(f, ", added our owner label {label}"),
                    None => Ok(()),
                }
            }
            Self::WritesAwaitSession {
                scale_set,
                label,
                settings,
            } => {
                write!(
                    f,
                    "{scale_set} is imported and its message session is not ours yet: nothing \
                     is written to it until it is; then"
                )?;
                if let Some(label) = label {
                    write!(f, " our owner label {label} is added")?;
                    if settings.is_some() {
                        write!(f, " and")?;
                    }
                }
                match (label, settings) {
                    (_, Some((ours, theirs))) => {
                        write!(f, " it is patched from {theirs} to {ours}")
                    }
                    (None, None) => write!(f, " it is patched to the configuration"),
                    (Some(_), None) => Ok(()),
                }
            }
            Self::SpecNotApplied {
                scale_set,
                ours,
                theirs,
            } => write!(
                f,
                "{scale_set} kept {theirs} after a patch to {ours}; it is still served: reduce \
                 the labels to the name on GHES without custom labels, or recreate it to turn \
                 disableUpdate off"
            ),
            Self::OwnerLabelMissing { scale_set, label } => write!(
                f,
                "GitHub dropped our owner label {label} from {scale_set}: after a database loss \
                 only its stored id shows it is ours; enable custom labels on GHES"
            ),
        }
    }
}

/// How a ready scale set came to be ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Provenance {
    /// Created by this run.
    Created,
    /// The stored id, confirmed on GitHub.
    Known,
    /// Found on GitHub and adopted.
    Adopted,
}

/// Evidence that a scale set is ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Evidence {
    /// This run created it.
    CreatedThisRun,
    /// The stored id equals GitHub's id.
    StoredId,
    /// It carries our owner label.
    OwnerLabel,
    /// A session conflict named our session owner (our own stale listener session; never
    /// the probe owner).
    OwnSession,
    /// The operator imported it from another manager (GARM) whose takeover note names this
    /// GitHub id and name.
    ImportedFrom,
}

/// Words for operators (events, plans): what the evidence is, not its name.
impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CreatedThisRun => "this controller having just created it",
            Self::StoredId => "the GitHub id we stored",
            Self::OwnerLabel => "our owner label",
            Self::OwnSession => "a message session held under our owner name",
            Self::ImportedFrom => "the takeover note of its import from GARM",
        })
    }
}

/// `, proven ours by our owner label and the GitHub id we stored`, or nothing for an adoption
/// on policy alone: the evidence as words for operators, not as enum names. The ready event
/// and the fleet plan's adopt reason say it alike.
pub fn evidence_sentence(evidence: &[Evidence]) -> String {
    if evidence.is_empty() {
        return String::new();
    }
    let words: Vec<String> = evidence.iter().map(ToString::to_string).collect();
    format!(", proven ours by {}", words.join(" and "))
}

/// What a rollback may do with a ready scale set (serialises, never deserialises: it may
/// carry a [`DeletePermit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum Rollback {
    /// Created in this run: rollback may delete it, and must show this permit to do so.
    MayDelete(DeletePermit),
    /// Known or adopted: rollback may only forget (detach) it, never delete it.
    DetachOnly,
}

impl Rollback {
    /// The delete permit, when there is one.
    pub fn permit(&self) -> Option<&DeletePermit> {
        match self {
            Self::MayDelete(permit) => Some(permit),
            Self::DetachOnly => None,
        }
    }
}

/// Proof that this run created a scale set, the only thing that allows deleting it on rollback.
///
/// Only the machine constructs it (its field is private), and only on the create path, for
/// [`Provenance::Created`]. It has no `Deserialize`, even with the `serde` feature, so nothing
/// read from a file, a request or a database can forge one: a store that must remember a
/// creation keeps its own record, writable only by handing over a permit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DeletePermit {
    id: GithubScaleSetId,
}

impl DeletePermit {
    pub(crate) fn new(id: GithubScaleSetId) -> Self {
        Self { id }
    }

    /// The scale set this run created.
    pub fn id(&self) -> GithubScaleSetId {
        self.id
    }
}

/// Why a run failed for good.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Failure {
    /// GitHub answered a 4xx other than the ones the machine handles (e.g.
    /// `InvalidRunnerScaleSetException`): fix the request; never a reason to adopt.
    BadRequest {
        /// The command GitHub rejected.
        command: CommandKind,
        /// The exception name.
        exception: String,
        /// GitHub's message.
        message: String,
    },
    /// The last allowed attempt would have been retried.
    AttemptsExhausted {
        /// Attempts made.
        attempts: u32,
        /// Why the last one would have been retried.
        last: RetryReason,
    },
    /// The create succeeded but GitHub returned a scale set with another name or group. It
    /// was created by this run; inspect it on GitHub before deleting it by hand.
    UnexpectedCreateResponse {
        /// What GitHub returned.
        created: ScaleSetRef,
    },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadRequest {
                command,
                exception,
                message,
            } => {
                write!(f, "github rejected {command}: {exception}: {message}")
            }
            Self::AttemptsExhausted { attempts, last } => {
                write!(f, "gave up after {attempts} attempts; last: {last}")
            }
            Self::UnexpectedCreateResponse { created } => {
                write!(
                    f,
                    "create returned {created}, not the desired name and group"
                )
            }
        }
    }
}

/// Why a run should be repeated later.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum RetryReason {
    /// 5xx, 429 or a transport error after the client's retries. A create may have succeeded,
    /// so the next run starts with a lookup.
    Transient {
        /// The command that failed.
        command: CommandKind,
        /// The client's message.
        message: String,
    },
    /// A session is active and GitHub did not say whose, or it is our own leaked ownership
    /// probe: neither proves anything; wait for it to end or expire.
    SessionHeld {
        /// The scale set.
        scale_set: ScaleSetRef,
        /// The owner name, when it was our probe's.
        owner: Option<String>,
    },
    /// Create said the scale set exists, but neither the name lookup nor the group listing
    /// shows it (GitHub's lists lag, or a competitor deleted it again).
    CreateRaceUnresolved {
        /// The desired name.
        desired_name: String,
        /// The runner group.
        desired_group: RunnerGroupId,
    },
    /// The scale set was deleted or renamed between two reads of this run.
    ChangedWhileReading {
        /// The scale set.
        id: GithubScaleSetId,
    },
    /// The stored id's read omitted the runner group and the group-scoped lookup does not list
    /// it yet (GitHub's lists lag): it is not confirmed in the desired group.
    KnownIdUnconfirmed {
        /// The stored id.
        id: GithubScaleSetId,
    },
    /// A session this run opened could not be closed; the driver should delete it.
    SessionNotClosed {
        /// The scale set.
        id: GithubScaleSetId,
        /// The session left open.
        session: SessionId,
    },
}

impl fmt::Display for RetryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transient { command, message } => write!(f, "{command} failed: {message}"),
            Self::SessionHeld {
                scale_set,
                owner: Some(owner),
            } => {
                write!(
                    f,
                    "{scale_set} has an active session of our probe {owner:?}"
                )
            }
            Self::SessionHeld {
                scale_set,
                owner: None,
            } => {
                write!(f, "{scale_set} has an active session of an unnamed owner")
            }
            Self::CreateRaceUnresolved {
                desired_name,
                desired_group,
            } => write!(
                f,
                "create reported {desired_name:?} exists in runner group {desired_group}, but no \
                 lookup finds it"
            ),
            Self::ChangedWhileReading { id } => {
                write!(f, "scale set {id} changed or vanished between reads")
            }
            Self::KnownIdUnconfirmed { id } => write!(
                f,
                "stored scale set {id} did not list its runner group and the group's lookup \
                 does not show it yet"
            ),
            Self::SessionNotClosed { id, session } => {
                write!(f, "session {session} on scale set {id} could not be closed")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The messages operators read: each names what happened and the ids involved.

    use super::*;
    use crate::command_kind::CommandKind;
    use crate::fact::FactKind;

    #[test]
    fn the_evidence_sentence_joins_the_proofs_in_words_and_is_empty_without_any() {
        assert_eq!(evidence_sentence(&[]), "");
        assert_eq!(
            evidence_sentence(&[Evidence::OwnerLabel]),
            ", proven ours by our owner label"
        );
        assert_eq!(
            evidence_sentence(&[Evidence::OwnerLabel, Evidence::StoredId]),
            ", proven ours by our owner label and the GitHub id we stored"
        );
    }

    #[test]
    fn evidence_reads_as_words_for_operators_not_as_its_name() {
        let words: Vec<String> = [
            Evidence::CreatedThisRun,
            Evidence::StoredId,
            Evidence::OwnerLabel,
            Evidence::OwnSession,
            Evidence::ImportedFrom,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            words,
            [
                "this controller having just created it",
                "the GitHub id we stored",
                "our owner label",
                "a message session held under our owner name",
                "the takeover note of its import from GARM",
            ]
        );
    }

    fn set() -> ScaleSetRef {
        ScaleSetRef {
            id: GithubScaleSetId(7),
            name: "ci".into(),
            runner_group_id: Some(RunnerGroupId(1)),
        }
    }

    fn settings(disable_update: bool) -> Settings {
        Settings {
            labels: vec!["ci".into(), "linux".into()],
            disable_update,
        }
    }

    #[test]
    fn failures_retry_reasons_and_notices_read_as_sentences() {
        let session = SessionId("s-1".into());
        let cases: Vec<(String, &str)> = vec![
            (
                Failure::BadRequest {
                    command: CommandKind::Create,
                    exception: "InvalidRunnerScaleSetException".into(),
                    message: "bad labels".into(),
                }
                .to_string(),
                "github rejected create scale set: InvalidRunnerScaleSetException: bad labels",
            ),
            (
                Failure::AttemptsExhausted {
                    attempts: 3,
                    last: RetryReason::ChangedWhileReading {
                        id: GithubScaleSetId(7),
                    },
                }
                .to_string(),
                "gave up after 3 attempts; last: scale set 7 changed or vanished between reads",
            ),
            (
                Failure::UnexpectedCreateResponse { created: set() }.to_string(),
                "create returned scale set 7 \"ci\" in runner group 1, not the desired name and group",
            ),
            (
                RetryReason::Transient {
                    command: CommandKind::GetById,
                    message: "503".into(),
                }
                .to_string(),
                "get scale set by id failed: 503",
            ),
            (
                RetryReason::SessionHeld {
                    scale_set: set(),
                    owner: Some("p".into()),
                }
                .to_string(),
                "scale set 7 \"ci\" in runner group 1 has an active session of our probe \"p\"",
            ),
            (
                RetryReason::SessionHeld {
                    scale_set: set(),
                    owner: None,
                }
                .to_string(),
                "scale set 7 \"ci\" in runner group 1 has an active session of an unnamed owner",
            ),
            (
                RetryReason::CreateRaceUnresolved {
                    desired_name: "ci".into(),
                    desired_group: RunnerGroupId(1),
                }
                .to_string(),
                "create reported \"ci\" exists in runner group 1, but no lookup finds it",
            ),
            (
                RetryReason::KnownIdUnconfirmed {
                    id: GithubScaleSetId(7),
                }
                .to_string(),
                "stored scale set 7 did not list its runner group and the group's lookup does \
                 not show it yet",
            ),
            (
                RetryReason::SessionNotClosed {
                    id: GithubScaleSetId(7),
                    session,
                }
                .to_string(),
                "session s-1 on scale set 7 could not be closed",
            ),
            (
                Notice::SpecApplied {
                    scale_set: set(),
                    before: settings(false),
                    after: settings(true),
                    moved_from: Some(RunnerGroupId(2)),
                    label_added: None,
                }
                .to_string(),
                "patched scale set 7 \"ci\" in runner group 1 from labels [ci, linux], \
                 disableUpdate false to labels [ci, linux], disableUpdate true, moved from \
                 runner group 2",
            ),
            (
                Notice::SpecApplied {
                    scale_set: set(),
                    before: settings(false),
                    after: settings(true),
                    moved_from: None,
                    label_added: None,
                }
                .to_string(),
                "patched scale set 7 \"ci\" in runner group 1 from labels [ci, linux], \
                 disableUpdate false to labels [ci, linux], disableUpdate true",
            ),
            (FactKind::SessionGone.to_string(), "session gone"),
        ];
        for (text, expected) in cases {
            assert_eq!(text, expected);
        }
        let not_applied = Notice::SpecNotApplied {
            scale_set: set(),
            ours: settings(false),
            theirs: settings(true),
        };
        assert!(not_applied.to_string().starts_with(
            "scale set 7 \"ci\" in runner group 1 kept labels [ci, linux], disableUpdate true \
             after a patch to labels [ci, linux], disableUpdate false"
        ));
        let missing = Notice::OwnerLabelMissing {
            scale_set: set(),
            label: "scaleset-owner-x".into(),
        };
        assert!(missing.to_string().starts_with(
            "GitHub dropped our owner label scaleset-owner-x from scale set 7 \"ci\""
        ));
        assert!(
            !Notice::SpecApplied {
                scale_set: set(),
                before: settings(true),
                after: settings(true),
                moved_from: None,
                label_added: None,
            }
            .is_warning()
        );
    }

    /// Issue 30 item 5: a permit cannot be deserialised (with `serde` on, as in these tests).
    /// An inherent constant, present only when the type implements `DeserializeOwned`, wins
    /// over the trait's default, so this reads "does `T` deserialise" on stable Rust.
    #[cfg(feature = "serde")]
    #[test]
    fn a_delete_permit_cannot_be_deserialised() {
        use std::marker::PhantomData;
        trait NotDeserialize {
            const DESERIALIZES: bool = false;
        }
        struct Probe<T>(PhantomData<T>);
        impl<T> NotDeserialize for Probe<T> {}
        impl<T: serde::de::DeserializeOwned> Probe<T> {
            #[allow(dead_code)]
            const DESERIALIZES: bool = true;
        }
        let deserialises = [
            ("Evidence", Probe::<Evidence>::DESERIALIZES),
            ("Refusal", Probe::<Refusal>::DESERIALIZES),
            ("DeletePermit", Probe::<DeletePermit>::DESERIALIZES),
            ("Rollback", Probe::<Rollback>::DESERIALIZES),
            ("Outcome", Probe::<Outcome>::DESERIALIZES),
        ];
        // Evidence and refusals are stored and read back (and show that the probe sees a
        // Deserialize); nothing that carries a permit deserialises.
        assert_eq!(
            deserialises,
            [
                ("Evidence", true),
                ("Refusal", true),
                ("DeletePermit", false),
                ("Rollback", false),
                ("Outcome", false),
            ]
        );
    }

    #[test]
    fn every_command_and_fact_kind_has_a_name() {
        let commands = [
            CommandKind::GetById,
            CommandKind::ListByName,
            CommandKind::ListGroup,
            CommandKind::Create,
            CommandKind::OpenSession,
            CommandKind::CloseSession,
            CommandKind::Update,
        ]
        .map(|kind| kind.to_string());
        assert_eq!(
            commands,
            [
                "get scale set by id",
                "list scale sets by name",
                "list scale sets in group",
                "create scale set",
                "open session",
                "close session",
                "update scale set"
            ]
        );
        let facts = [
            FactKind::ScaleSet,
            FactKind::ScaleSets,
            FactKind::NotFound,
            FactKind::Exists,
            FactKind::SessionGone,
            FactKind::BadRequest,
            FactKind::Transient,
            FactKind::Opened,
            FactKind::Conflict,
            FactKind::Updated,
            FactKind::Closed,
        ]
        .map(|kind| kind.to_string());
        let mut distinct = facts.to_vec();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), facts.len(), "{facts:?}");
        assert!(facts.iter().all(|name| !name.is_empty()));
        assert_eq!(SessionId("s-9".into()).to_string(), "s-9");
        let thin = ScaleSetRef {
            runner_group_id: None,
            ..set()
        };
        assert_eq!(
            thin.to_string(),
            "scale set 7 \"ci\" (runner group not returned)"
        );
    }
}
