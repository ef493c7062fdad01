//! Outcomes: how a run ends (ready, refused, failed, retry later), the evidence behind a
//! ready scale set, and the only permission rollback has to delete one.

use std::fmt;
use std::time::Duration;

use crate::command::CommandKind;
use crate::refusal::Refusal;
use crate::scale_set::{RunnerGroupId, ScaleSetId, ScaleSetRef, SessionId};

/// How a run of the machine ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Outcome {
    /// The scale set is ours to use.
    Ready {
        /// GitHub's id; store it.
        id: ScaleSetId,
        /// How we came to hold it.
        provenance: Provenance,
        /// Ownership evidence seen (empty only for an adoption under policy `any`).
        evidence: Vec<Evidence>,
        /// Under policy `any`, the session the ownership probe opened, handed over to the
        /// caller (the driver kept the full session with its token) so no call is wasted.
        session: Option<SessionId>,
        /// The stored id was gone on GitHub (dormancy): discard the stored message cursor.
        reset_cursor: bool,
        /// Whether a rollback of the surrounding operation may delete this scale set.
        rollback: Rollback,
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
    pub fn ready_id(&self) -> Option<ScaleSetId> {
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
    /// A session conflict named our session owner (our own stale session).
    OwnSession,
}

/// What a rollback may do with a ready scale set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
/// Only the machine constructs it (its field is private), and only for
/// [`Provenance::Created`]. With the `serde` feature it can be deserialized too, so a permit
/// read back from storage is exactly as trustworthy as that storage.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DeletePermit {
    id: ScaleSetId,
}

impl DeletePermit {
    pub(crate) fn new(id: ScaleSetId) -> Self {
        Self { id }
    }

    /// The scale set this run created.
    pub fn id(&self) -> ScaleSetId {
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
        id: ScaleSetId,
    },
    /// A session this run opened could not be closed; the driver should delete it.
    SessionNotClosed {
        /// The scale set.
        id: ScaleSetId,
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
            Self::SessionNotClosed { id, session } => {
                write!(f, "session {session} on scale set {id} could not be closed")
            }
        }
    }
}
