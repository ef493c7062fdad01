//! The one GitHub scale-set delete: carries out a [`GitHubDeletion`] the deletion planner
//! ([`crate::plan_deletion`]) made. It decides nothing: what is deleted is the planner's
//! answer, and whether GitHub's refusal means "gone already" is
//! [`crate::planner::deletion::already_gone`].

use scaleset_store::ScaleSet;

use scaleset_control::ClientFactory;

use crate::planner::deletion::{GitHubDeletion, already_gone};
use scaleset_control::Error;

/// Deletes the GitHub scale set `deletion` names, through `scale_set`'s client. Already gone
/// on GitHub counts as deleted (the goal holds).
///
/// # Errors
///
/// A client that cannot be built, or GitHub's refusal or failure of the delete
/// ([`Error::GitHub`]).
pub async fn delete_on_github(
    clients: &dyn ClientFactory,
    scale_set: &ScaleSet,
    deletion: &GitHubDeletion,
) -> Result<(), Error> {
    let client = clients.client(scale_set).await?;
    match client.delete_scale_set(deletion.github_id().into()).await {
        Ok(()) => Ok(()),
        Err(e) if already_gone(&e) => Ok(()),
        Err(source) => Err(Error::GitHub {
            scale_set: scale_set.spec.name().to_string(),
            during: "deleting the scale set on GitHub",
            source,
        }),
    }
}
