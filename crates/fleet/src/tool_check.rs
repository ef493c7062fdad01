//! `--check`'s look at the runner downloads: for every declared scale set, whether its
//! entity's list (read from GitHub once per entity) has a download for the set's OS and
//! architecture, by the rule the worker's providers apply ([`scaleset_store::pick_download`]).
//! A set without one is a warning, not a failure: GitHub's list may change, and the worker
//! would show the set in `error` and retry.

use std::collections::BTreeMap;
use std::time::Duration;

use scaleset_github::ClientConfig;
use scaleset_store::{EntityKind, ToolDownload};

use scaleset_control::{build_client, join_all, stored_download as stored};

use crate::error::chain;
use crate::planner::fleet::Fleet;

/// How long one entity's read may take, retries included: `--check` must answer.
const READ_WITHIN: Duration = Duration::from_secs(20);

/// What the check found for one scale set, or one entity's sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCheck {
    /// Whether it is a warning (else what a new runner gets).
    pub warning: bool,
    /// What was found, and for a warning what to do.
    pub text: String,
}

/// Reads each entity's runner downloads once, with the credentials the fleet declares for it
/// (`configure` adjusts each client: the process's proxy), and says for every declared scale
/// set which download a new runner gets, or warns that none does. An entity whose list cannot
/// be read, or whose credentials are only in the database, is one warning naming its sets.
pub async fn check_runner_tools(
    fleet: &Fleet,
    configure: &(dyn Fn(ClientConfig) -> ClientConfig + Send + Sync),
) -> Vec<ToolCheck> {
    let mut by_entity: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (index, set) in fleet.scale_sets.iter().enumerate() {
        by_entity
            .entry((set.credentials.clone(), set.entity.to_string()))
            .or_default()
            .push(index);
    }
    // Every entity at once: an unreachable GitHub costs `READ_WITHIN` once, not per entity.
    let groups: Vec<(String, Vec<usize>)> = by_entity
        .into_iter()
        .map(|((credentials, _), indexes)| (credentials, indexes))
        .collect();
    let reads = join_all(groups.iter().map(|(credentials, indexes)| {
        read(
            fleet,
            credentials,
            &fleet.scale_sets[indexes[0]].entity,
            configure,
        )
    }))
    .await;
    let mut found = Vec::new();
    for ((_, indexes), read) in groups.iter().zip(reads) {
        let sets: Vec<_> = indexes.iter().map(|&i| &fleet.scale_sets[i]).collect();
        let entity: &EntityKind = &sets[0].entity;
        let names = sets
            .iter()
            .map(|s| format!("{:?}", s.spec.name()))
            .collect::<Vec<_>>()
            .join(", ");
        let list = match read {
            Ok(list) => list,
            Err(why) => {
                let why = chain(&why);
                found.push(ToolCheck {
                    warning: true,
                    text: format!(
                        "the runner downloads of {entity} were not checked: {why}; scale sets \
                         {names} are not checked (the worker reads the list before creating \
                         runners and shows a failure on the scale set)"
                    ),
                });
                continue;
            }
        };
        for set in sets {
            let (os_type, os_arch) = (set.spec.os_type(), set.spec.os_arch());
            found.push(
                match scaleset_store::pick_download(&list, os_type, os_arch) {
                    Some(download) => ToolCheck {
                        warning: false,
                        text: format!(
                            "scale set {}: a new {os_type}/{os_arch} runner gets {} ({})",
                            set.key(),
                            download.filename,
                            download.download_url
                        ),
                    },
                    None => ToolCheck {
                        warning: true,
                        text: format!(
                            "scale set {}: the runner downloads of {entity} {}",
                            set.key(),
                            scaleset_store::no_download(
                                &list,
                                os_type,
                                os_arch,
                                "os_type and os_arch of the scale set in this file"
                            )
                        ),
                    },
                },
            );
        }
    }
    found
}

/// One entity's list, read with the declared credentials `name`.
async fn read(
    fleet: &Fleet,
    name: &str,
    entity: &EntityKind,
    configure: &(dyn Fn(ClientConfig) -> ClientConfig + Send + Sync),
) -> Result<Vec<ToolDownload>, ReadError> {
    let Some(credentials) = fleet.credentials.iter().find(|c| c.name == name) else {
        return Err(ReadError::Undeclared {
            credentials: name.to_owned(),
        });
    };
    let client = build_client(
        name,
        &credentials.endpoint,
        &credentials.auth,
        entity,
        configure,
    )
    .map_err(|e| ReadError::Client(Box::new(e)))?;
    match tokio::time::timeout(READ_WITHIN, client.runner_downloads()).await {
        Ok(Ok(list)) => Ok(list.iter().map(stored).collect()),
        Ok(Err(e)) => Err(ReadError::GitHub(e)),
        Err(_) => Err(ReadError::Timeout),
    }
}

/// Why one entity's runner downloads were not read.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// The credentials are only in the database.
    #[error("its credentials {credentials:?} are not declared in this file (only in the database)")]
    Undeclared {
        /// The credentials' name.
        credentials: String,
    },
    /// No client can be built from the declared credentials.
    #[error(transparent)]
    Client(Box<scaleset_control::Error>),
    /// GitHub answered with an error.
    #[error("reading them from GitHub failed")]
    GitHub(#[source] scaleset_github::Error),
    /// GitHub did not answer in time.
    #[error("GitHub did not answer within {}s", READ_WITHIN.as_secs())]
    Timeout,
}
