//! The runner downloads of each entity, GARM's `tools`: read from GitHub once per entity per
//! refresh, however many scale sets the entity has, and handed whole (every OS and
//! architecture) to every bootstrap. garm-provider-common picks the download for the
//! instance's OS and architecture from this list and refuses an empty one, so a scale set
//! whose entity's list cannot be had creates no runner until it can.
//!
//! When to read is decided by [`due`] (no I/O, no clock: the time comes in); [`RunnerTools`]
//! carries it out, one read at a time per entity (the others wait for its answer). Every read,
//! good or failed, is also written to the store ([`scaleset_store::RunnerDownloadStore`]): the
//! API server, which does not share this memory, reads it there to say which download a new
//! runner of a scale set would get. The memory stays the hot path; a failed write costs only
//! that view its freshness.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use scaleset_github::{Client, RunnerDownload};
use scaleset_store::{EntityId, RunnerDownloadStore, ToolDownload};
use tokio::time::Instant;

/// One entity's list as last read, and the last failed read.
#[derive(Debug, Default)]
struct Entry {
    /// The list and when it was read.
    list: Option<(Arc<[RunnerDownload]>, Instant)>,
    /// The last read's failure, kept until the next read, and when it failed.
    failed: Option<(Arc<scaleset_github::Error>, Instant)>,
}

/// What to do with an entity's list at some instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// The list is fresh (or a read failed too recently to try again and a list is held):
    /// use the held list.
    Use,
    /// Read it from GitHub.
    Read,
    /// A read failed too recently to try again and no list is held: fail with that failure.
    Failed,
}

/// How long a list is used and how soon a failed read is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refresh {
    /// A list older than this is read again.
    pub(crate) every: Duration,
    /// After a failed read, GitHub is asked again after this long at the earliest (the
    /// scale sets asking meanwhile get the held list, or the failure).
    pub(crate) retry: Duration,
}

/// Whether an entity's list read `read` ago (`None`: never) and its last failure `failed`
/// ago (`None`: none since the last read) are used, read again or failed.
pub(crate) fn due(read: Option<Duration>, failed: Option<Duration>, refresh: Refresh) -> Due {
    if read.is_some_and(|age| age < refresh.every) {
        return Due::Use;
    }
    match failed {
        Some(age) if age < refresh.retry => {
            if read.is_some() {
                Due::Use
            } else {
                Due::Failed
            }
        }
        _ => Due::Read,
    }
}

/// The runner downloads of every entity this process serves.
pub(crate) struct RunnerTools {
    refresh: Refresh,
    entries: std::sync::Mutex<HashMap<EntityId, Arc<tokio::sync::Mutex<Entry>>>>,
}

impl RunnerTools {
    pub(crate) fn new(refresh: Refresh) -> Self {
        Self {
            refresh,
            entries: std::sync::Mutex::default(),
        }
    }

    fn entry(&self, entity: EntityId) -> Arc<tokio::sync::Mutex<Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(entity)
            .or_default()
            .clone()
    }

    /// The entity's list: the held one while fresh, else read with `client` (one REST call;
    /// concurrent callers wait for it) and recorded in `store`. A failed read keeps the held
    /// list in use until the next try; with none held, the failure is the answer until then.
    pub(crate) async fn of(
        &self,
        entity: EntityId,
        client: &Client,
        store: &dyn RunnerDownloadStore,
    ) -> Result<Arc<[RunnerDownload]>, Arc<scaleset_github::Error>> {
        let entry = self.entry(entity);
        let mut entry = entry.lock().await;
        let now = Instant::now();
        let read = entry.list.as_ref().map(|(_, at)| now.duration_since(*at));
        let failed = entry.failed.as_ref().map(|(_, at)| now.duration_since(*at));
        match due(read, failed, self.refresh) {
            Due::Use => {
                if let Some((list, _)) = &entry.list {
                    return Ok(Arc::clone(list));
                }
            }
            Due::Failed => {
                if let Some((error, _)) = &entry.failed {
                    return Err(Arc::clone(error));
                }
            }
            Due::Read => {}
        }
        match client.runner_downloads().await {
            Ok(list) => {
                let list: Arc<[RunnerDownload]> = list.into();
                entry.list = Some((Arc::clone(&list), Instant::now()));
                entry.failed = None;
                let stored: Vec<ToolDownload> = list.iter().map(stored).collect();
                if let Err(e) = store.record_runner_downloads(entity, &stored).await {
                    tracing::warn!(%entity, error = %scaleset_store::chain(&e), "recording the runner downloads just read failed; the API shows the list recorded before until the next read");
                }
                Ok(list)
            }
            Err(error) => {
                let error = Arc::new(error);
                entry.failed = Some((Arc::clone(&error), Instant::now()));
                let failure = crate::error::chain(&*error);
                if let Err(e) = store
                    .record_runner_downloads_failure(entity, &failure)
                    .await
                {
                    tracing::warn!(%entity, error = %scaleset_store::chain(&e), "recording a failed read of the runner downloads failed");
                }
                match &entry.list {
                    Some((list, _)) => {
                        tracing::warn!(error = %crate::error::chain(&*error), "reading the runner downloads again failed; the list read before stays in use");
                        Ok(Arc::clone(list))
                    }
                    None => Err(error),
                }
            }
        }
    }
}

/// A download as the store keeps it: without the download token (a short-lived secret).
pub fn stored(download: &RunnerDownload) -> ToolDownload {
    ToolDownload {
        os: download.os.clone(),
        architecture: download.architecture.clone(),
        filename: download.filename.clone(),
        download_url: download.download_url.clone(),
        sha256_checksum: download.sha256_checksum.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFRESH: Refresh = Refresh {
        every: Duration::from_secs(900),
        retry: Duration::from_secs(60),
    };

    fn secs(s: u64) -> Option<Duration> {
        Some(Duration::from_secs(s))
    }

    #[test]
    fn a_list_is_read_when_none_is_held_and_again_once_it_is_old() {
        assert_eq!(due(None, None, REFRESH), Due::Read);
        assert_eq!(due(secs(899), None, REFRESH), Due::Use);
        assert_eq!(due(secs(900), None, REFRESH), Due::Read);
    }

    #[test]
    fn a_failed_read_is_tried_again_only_after_the_retry_wait() {
        assert_eq!(due(None, secs(59), REFRESH), Due::Failed);
        assert_eq!(due(None, secs(60), REFRESH), Due::Read);
        assert_eq!(due(secs(1000), secs(59), REFRESH), Due::Use);
        assert_eq!(due(secs(1000), secs(60), REFRESH), Due::Read);
        // A fresh list is used whatever failed before it.
        assert_eq!(due(secs(10), secs(1), REFRESH), Due::Use);
    }
}
