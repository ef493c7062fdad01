//! The session executor: the one place in `control` that deletes a message session on GitHub
//! (besides the adoption driver, which executes `scaleset-adopt`'s commands). The listener
//! and an ensure decide which session goes and when; [`execute`] carries the delete out and
//! [`answer`] turns GitHub's reply into the fact ([`DeleteAnswer`]) the session planner
//! decides from (`crate::planner::session::after_stale_delete`). It decides nothing.

use scaleset_github::{Client, GithubScaleSetId};

use crate::planner::session::DeleteAnswer;

/// A session command the listener or an ensure decided on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command<'a> {
    /// Delete `session` of the GitHub scale set `scale_set`: our stale session before a new
    /// one opens, ours at a clean shutdown, or the one an ensure opened and does not keep.
    Delete {
        /// The GitHub scale set.
        scale_set: GithubScaleSetId,
        /// The session's id.
        session: &'a str,
    },
}

/// Carries `command` out with `client` and hands back GitHub's reply as it came (the caller
/// logs or wraps the error where it handles it).
pub(crate) async fn execute(
    client: &Client,
    command: Command<'_>,
) -> Result<(), scaleset_github::Error> {
    match command {
        Command::Delete { scale_set, session } => client.delete_session(scale_set, session).await,
    }
}

/// The fact a session delete's reply gives: any sign the session is gone, any other 400, the
/// scale set gone, or a failure.
pub(crate) fn answer(result: &Result<(), scaleset_github::Error>, session: &str) -> DeleteAnswer {
    match result {
        Ok(()) => DeleteAnswer::Deleted,
        Err(e) if e.session_gone(session).is_some() => DeleteAnswer::Gone,
        Err(e) if e.status() == Some(400) => DeleteAnswer::BadRequest,
        Err(e) if e.is_scale_set_not_found() => DeleteAnswer::ScaleSetNotFound,
        Err(_) => DeleteAnswer::Failed,
    }
}
