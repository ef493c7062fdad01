//! The crate's error type: misuse of the machine by its driver (never a GitHub condition,
//! which always arrives as a [`Fact`](crate::Fact) and ends in an [`Outcome`](crate::Outcome)).

use crate::command_kind::CommandKind;
use crate::fact::FactKind;
use crate::scale_set::GithubScaleSetId;

/// A driver fed the machine something that does not answer the pending command. The machine
/// is unchanged by an error: the driver may still feed the right fact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `next` was called before `start`.
    #[error("the machine was not started: call start() first")]
    NotStarted,
    /// `next` was called after the machine returned an outcome.
    #[error("the machine already finished: run a new machine for a new attempt")]
    Finished,
    /// The fact's kind does not fit the pending command.
    #[error("fact `{fact}` does not answer the pending command `{command}`")]
    UnexpectedFact {
        /// The pending command.
        command: CommandKind,
        /// The fact received.
        fact: FactKind,
    },
    /// A read by id returned a different scale set.
    #[error("reading scale set {expected} returned scale set {got}")]
    WrongScaleSet {
        /// The id that was read.
        expected: GithubScaleSetId,
        /// The id in the answer.
        got: GithubScaleSetId,
    },
}
