//! Facts: what GitHub answered to a [`Command`](crate::Command), as the driver reports it.

use std::fmt;

use crate::scale_set::{ScaleSet, SessionId};

/// GitHub's answer to the pending command. Each command documents which facts fit it; any
/// other fact is an [`Error::UnexpectedFact`](crate::Error::UnexpectedFact).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Fact {
    /// One scale set: the answer to `GetById` or a successful `Create`.
    ScaleSet(ScaleSet),
    /// Every item of a list response, unfiltered (the machine does the matching).
    ScaleSets(Vec<ScaleSet>),
    /// GitHub's `RunnerScaleSetNotFoundException` for the scale set the command names. A
    /// bare 404 without it (a router, a proxy) is not this fact: report it as `BadRequest`.
    NotFound,
    /// The create failed with `RunnerScaleSetExistsException`, also when the client found it
    /// nested inside another error's message or inner exception.
    Exists,
    /// Closing a session: GitHub says the session is gone (`RunnerScaleSetSessionExpiredException`
    /// or an error naming that session id as unknown). Nobody can use it any more.
    SessionGone,
    /// Any other 4xx. `exception` is the short exception name when GitHub sent one. Only
    /// reported to the operator: the machine never decides on its text.
    BadRequest {
        /// Exception type name, e.g. `InvalidRunnerScaleSetException` (may be empty).
        exception: String,
        /// GitHub's message.
        message: String,
    },
    /// 5xx, 429 or a transport error after the client's own retries. The call may or may not
    /// have taken effect.
    Transient {
        /// What went wrong, for the operator.
        message: String,
    },
    /// The session was created.
    Opened(SessionId),
    /// 409 `RunnerScaleSetSessionConflictException`: another session is active. `owner` is the
    /// owner name when the message carried one.
    Conflict {
        /// The holder's `ownerName`, if GitHub said.
        owner: Option<String>,
    },
    /// The PATCH succeeded.
    Updated,
    /// The session was deleted.
    Closed,
}

impl Fact {
    /// The fact's kind, for logs and errors.
    pub fn kind(&self) -> FactKind {
        match self {
            Self::ScaleSet(_) => FactKind::ScaleSet,
            Self::ScaleSets(_) => FactKind::ScaleSets,
            Self::NotFound => FactKind::NotFound,
            Self::Exists => FactKind::Exists,
            Self::SessionGone => FactKind::SessionGone,
            Self::BadRequest { .. } => FactKind::BadRequest,
            Self::Transient { .. } => FactKind::Transient,
            Self::Opened(_) => FactKind::Opened,
            Self::Conflict { .. } => FactKind::Conflict,
            Self::Updated => FactKind::Updated,
            Self::Closed => FactKind::Closed,
        }
    }
}

/// The kind of a [`Fact`], without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum FactKind {
    /// [`Fact::ScaleSet`].
    ScaleSet,
    /// [`Fact::ScaleSets`].
    ScaleSets,
    /// [`Fact::NotFound`].
    NotFound,
    /// [`Fact::Exists`].
    Exists,
    /// [`Fact::SessionGone`].
    SessionGone,
    /// [`Fact::BadRequest`].
    BadRequest,
    /// [`Fact::Transient`].
    Transient,
    /// [`Fact::Opened`].
    Opened,
    /// [`Fact::Conflict`].
    Conflict,
    /// [`Fact::Updated`].
    Updated,
    /// [`Fact::Closed`].
    Closed,
}

impl fmt::Display for FactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ScaleSet => "scale set",
            Self::ScaleSets => "scale-set list",
            Self::NotFound => "not found",
            Self::Exists => "scale set exists",
            Self::SessionGone => "session gone",
            Self::BadRequest => "bad request",
            Self::Transient => "transient failure",
            Self::Opened => "session opened",
            Self::Conflict => "session conflict",
            Self::Updated => "updated",
            Self::Closed => "session closed",
        })
    }
}
