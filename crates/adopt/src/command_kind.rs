//! [`CommandKind`]: a command without its data, as errors and outcomes name it. Its own
//! module so the error type can name a command without depending on the commands, which
//! return that error from their fit check.

use std::fmt;

/// The kind of a [`Command`](crate::Command), without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum CommandKind {
    /// [`Command::GetById`](crate::Command::GetById).
    GetById,
    /// [`Command::ListByName`](crate::Command::ListByName).
    ListByName,
    /// [`Command::ListGroup`](crate::Command::ListGroup).
    ListGroup,
    /// [`Command::Create`](crate::Command::Create).
    Create,
    /// [`Command::OpenSession`](crate::Command::OpenSession).
    OpenSession,
    /// [`Command::CloseSession`](crate::Command::CloseSession).
    CloseSession,
    /// [`Command::Update`](crate::Command::Update).
    Update,
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::GetById => "get scale set by id",
            Self::ListByName => "list scale sets by name",
            Self::ListGroup => "list scale sets in group",
            Self::Create => "create scale set",
            Self::OpenSession => "open session",
            Self::CloseSession => "close session",
            Self::Update => "update scale set",
        })
    }
}
