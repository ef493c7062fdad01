//! Commands the machine asks its driver to execute against GitHub.

use crate::command_kind::CommandKind;
use crate::error::Error;
use crate::fact::Fact;
use crate::scale_set::{GithubScaleSetId, RunnerGroupId, SessionId};

/// One GitHub call for the driver to make; answer it with the matching [`Fact`](crate::Fact).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Command {
    /// `GET runnerscalesets/{id}`; answer `ScaleSet`, `NotFound`, `BadRequest` or `Transient`.
    GetById {
        /// The scale set to read.
        id: GithubScaleSetId,
    },
    /// `GET runnerscalesets?runnerGroupId={group}&name={name}` (name percent-encoded); answer
    /// `ScaleSets` with every item returned (unfiltered), `BadRequest` or `Transient`.
    ListByName {
        /// The runner group queried.
        group: RunnerGroupId,
        /// The exact desired name.
        name: String,
    },
    /// `GET runnerscalesets?runnerGroupId={group}`; answer like [`Command::ListByName`].
    ListGroup {
        /// The runner group queried.
        group: RunnerGroupId,
    },
    /// `POST runnerscalesets`; answer `ScaleSet` (the created set), `Exists` (a
    /// `RunnerScaleSetExistsException`, also when nested), `BadRequest` or `Transient`.
    Create(CreateSpec),
    /// `POST runnerscalesets/{id}/sessions` with `ownerName = owner`; answer `Opened`,
    /// `Conflict` (409), `NotFound`, `BadRequest` or `Transient`.
    OpenSession {
        /// The scale set.
        id: GithubScaleSetId,
        /// The `ownerName` to send.
        owner: String,
    },
    /// `DELETE runnerscalesets/{id}/sessions/{session}`; answer `Closed`, `SessionGone` (the
    /// session expired or is unknown: closed too), `NotFound` (the scale set is gone, and its
    /// sessions with it), `BadRequest` or `Transient`.
    CloseSession {
        /// The scale set.
        id: GithubScaleSetId,
        /// The session opened earlier in this run.
        session: SessionId,
    },
    /// `PATCH runnerscalesets/{id}` with the patch; answer `Updated`, `NotFound`, `BadRequest`
    /// or `Transient`.
    Update {
        /// The scale set.
        id: GithubScaleSetId,
        /// The fields to set.
        patch: Patch,
    },
}

impl Command {
    /// The command's kind, for logs and errors.
    pub fn kind(&self) -> CommandKind {
        match self {
            Self::GetById { .. } => CommandKind::GetById,
            Self::ListByName { .. } => CommandKind::ListByName,
            Self::ListGroup { .. } => CommandKind::ListGroup,
            Self::Create(_) => CommandKind::Create,
            Self::OpenSession { .. } => CommandKind::OpenSession,
            Self::CloseSession { .. } => CommandKind::CloseSession,
            Self::Update { .. } => CommandKind::Update,
        }
    }

    /// Whether `fact` answers this command (as each variant documents) and, for a read by
    /// id, names the scale set read.
    ///
    /// # Errors
    ///
    /// [`Error::UnexpectedFact`] for a fact of another kind, [`Error::WrongScaleSet`] for a
    /// read by id that returned another id.
    pub fn fits(&self, fact: &Fact) -> Result<(), Error> {
        let fits = match (self, fact) {
            (_, Fact::BadRequest { .. } | Fact::Transient { .. }) => true,
            (Self::GetById { id }, Fact::ScaleSet(set)) if set.id != *id => {
                return Err(Error::WrongScaleSet {
                    expected: *id,
                    got: set.id,
                });
            }
            (Self::GetById { .. }, Fact::ScaleSet(_) | Fact::NotFound)
            | (Self::ListByName { .. } | Self::ListGroup { .. }, Fact::ScaleSets(_))
            | (Self::Create(_), Fact::ScaleSet(_) | Fact::Exists)
            | (
                Self::OpenSession { .. },
                Fact::Opened(_) | Fact::Conflict { .. } | Fact::NotFound,
            )
            | (Self::CloseSession { .. }, Fact::Closed | Fact::SessionGone | Fact::NotFound)
            | (Self::Update { .. }, Fact::Updated | Fact::NotFound) => true,
            _ => false,
        };
        if fits {
            Ok(())
        } else {
            Err(Error::UnexpectedFact {
                command: self.kind(),
                fact: fact.kind(),
            })
        }
    }
}

/// The body of a create: name, group, labels (the name, the configured labels, then our owner
/// label) and `disableUpdate`. Labels are sent with `type: "System"`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CreateSpec {
    /// Scale-set name.
    pub name: String,
    /// Runner group id.
    pub runner_group_id: RunnerGroupId,
    /// Label names, case-insensitively de-duplicated, first spelling kept.
    pub labels: Vec<String>,
    /// `runnerSetting.disableUpdate`.
    pub disable_update: bool,
}

/// The body of a PATCH (a repair, or a spec change of a known scale set): the full label list
/// (which replaces GitHub's), `disableUpdate` and the runner group.
///
/// The labels are the configuration's plus our owner label, never another controller's: the
/// machine sends an `Update` only when no read of the run showed a foreign owner label (that
/// refuses as [`Refusal::ForeignOwner`](crate::Refusal::ForeignOwner)), so a PATCH never
/// removes a claim the run could see. Any other label is configuration: a known set is
/// ours, and a found one is only patched with `repair`, so labels the configuration does not
/// name are removed (they would route jobs the operator did not ask for to our runners).
///
/// The machine cannot know what the client puts on the wire: a client may omit
/// `disableUpdate: false` (the official clients do), and GitHub ignores zero-value fields in
/// a PATCH, so a repair from `true` to `false` may not take. The read-back after every repair
/// catches that and ends in [`Refusal::RepairDidNotTake`](crate::Refusal::RepairDidNotTake).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Patch {
    /// Label names: the name, the configured labels and our owner label.
    pub labels: Vec<String>,
    /// `runnerSetting.disableUpdate`.
    pub disable_update: bool,
    /// `runnerGroupId`: the configured group (moves a known scale set whose group changed).
    pub runner_group_id: RunnerGroupId,
}
