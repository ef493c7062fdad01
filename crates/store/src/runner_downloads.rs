//! Each entity's runner downloads (GARM's `tools`) as a worker last read them from GitHub,
//! kept so that the processes that do not share the worker's memory (the API server,
//! `scalesetctl` through it) can say which download a new runner of a scale set would get, or
//! that it would get none, before a provider fails on it. The worker's own cache stays the
//! hot path; this row is written whenever that cache reads GitHub.
//!
//! Which download a runner gets is [`pick`]: garm-provider-common's rule, the scale set's OS
//! and architecture mapped to GitHub's spelling by [`OsType::github_os`] and
//! [`OsArch::github_architecture`].

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::EntityId;
use crate::platform::{OsArch, OsType};

/// One runner download as stored: GitHub's fields but the short-lived download token (a
/// secret, useless once expired, and never shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDownload {
    /// GitHub's `os`: `linux`, `win` or `osx`.
    pub os: String,
    /// GitHub's `architecture`: `x64`, `arm64`, `arm`…
    pub architecture: String,
    /// The archive's file name.
    pub filename: String,
    /// Where the archive is downloaded from.
    pub download_url: String,
    /// Lowercase hex SHA-256 of the archive, when GitHub gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_checksum: Option<String>,
}

/// An entity's runner downloads as last read, and the last failed read since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerDownloads {
    /// The entity.
    pub entity_id: EntityId,
    /// The list of the last good read and when it was read; `None` before one.
    pub read: Option<(Vec<ToolDownload>, Timestamp)>,
    /// The last read's failure and when it failed, while no good read followed it.
    pub failure: Option<(String, Timestamp)>,
}

/// Whether a download GitHub lists as `os`/`architecture` is the one garm-provider-common picks
/// for a runner of `os_type`/`os_arch`.
pub fn runs_on(os_type: OsType, os_arch: OsArch, os: &str, architecture: &str) -> bool {
    os == os_type.github_os() && architecture == os_arch.github_architecture()
}

/// The download a new runner of `os_type`/`os_arch` gets from `list`: the first that
/// [`runs_on`] it (garm-provider-common takes the first match), `None` when there is none and
/// the provider would refuse to create the runner.
pub fn pick(list: &[ToolDownload], os_type: OsType, os_arch: OsArch) -> Option<&ToolDownload> {
    list.iter()
        .find(|d| runs_on(os_type, os_arch, &d.os, &d.architecture))
}

/// The OS/architecture pairs, in GARM's spelling (`linux/amd64`), that some download of `list`
/// serves: what a scale set of this entity may ask for.
pub fn offered(list: &[ToolDownload]) -> Vec<(OsType, OsArch)> {
    OsType::ALL
        .into_iter()
        .flat_map(|os| OsArch::ALL.into_iter().map(move |arch| (os, arch)))
        .filter(|&(os, arch)| pick(list, os, arch).is_some())
        .collect()
}

/// Why `list` serves no runner of `os_type`/`os_arch` and what to do, to follow "the runner
/// downloads of `<entity>`": the platforms GitHub offers instead (or that it offers none), and
/// `change`, where the operator changes the set's platform.
pub fn no_download(
    list: &[ToolDownload],
    os_type: OsType,
    os_arch: OsArch,
    change: &str,
) -> String {
    let offered: Vec<String> = offered(list)
        .into_iter()
        .map(|(os, arch)| format!("{os}/{arch}"))
        .collect();
    let choose = if offered.is_empty() {
        "GitHub lists no runner download at all for it; check the entity on GitHub".to_owned()
    } else {
        format!(
            "pick an os_type/os_arch GitHub offers: {} ({change})",
            offered.join(", ")
        )
    };
    format!(
        "have none for {os_type}/{os_arch} (GitHub's os {:?}, architecture {:?}): every \
         provider built on garm-provider-common refuses to create its runners (\"failed to find \
         tools for OS {os_type} and arch {os_arch}\"); {choose}",
        os_type.github_os(),
        os_arch.github_architecture(),
    )
}

/// The stored runner downloads of every entity.
#[async_trait]
pub trait RunnerDownloadStore: Send + Sync {
    /// Records a good read of `entity`'s list, now; clears the failure.
    async fn record_runner_downloads(&self, entity: EntityId, list: &[ToolDownload]) -> Result<()>;

    /// Records a failed read of `entity`'s list, now; the list read before stays.
    async fn record_runner_downloads_failure(&self, entity: EntityId, failure: &str) -> Result<()>;

    /// What was recorded for `entity`; `None` when nothing was (no worker has read it yet).
    async fn runner_downloads(&self, entity: EntityId) -> Result<Option<RunnerDownloads>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn download(os: &str, architecture: &str) -> ToolDownload {
        ToolDownload {
            os: os.to_owned(),
            architecture: architecture.to_owned(),
            filename: format!("actions-runner-{os}-{architecture}.tar.gz"),
            download_url: format!("https://example.test/{os}-{architecture}"),
            sha256_checksum: None,
        }
    }

    #[test]
    fn a_runner_gets_the_download_of_its_os_and_architecture_in_githubs_spelling() {
        let list = [
            download("osx", "x64"),
            download("linux", "arm64"),
            download("linux", "x64"),
            download("win", "x64"),
        ];
        let got = |os, arch| pick(&list, os, arch).map(|d| d.filename.as_str());
        assert_eq!(
            got(OsType::Linux, OsArch::Amd64),
            Some("actions-runner-linux-x64.tar.gz")
        );
        assert_eq!(
            got(OsType::Linux, OsArch::Arm64),
            Some("actions-runner-linux-arm64.tar.gz")
        );
        assert_eq!(
            got(OsType::Windows, OsArch::Amd64),
            Some("actions-runner-win-x64.tar.gz")
        );
        assert_eq!(got(OsType::Linux, OsArch::Arm), None);
        assert_eq!(got(OsType::Windows, OsArch::Arm64), None);
        // GitHub builds no 32-bit x86 runner: a 386 set never has a download.
        assert_eq!(got(OsType::Linux, OsArch::I386), None);
    }

    #[test]
    fn offered_lists_every_pair_some_download_serves_in_garms_spelling() {
        let list = [download("linux", "x64"), download("win", "arm64")];
        assert_eq!(
            offered(&list),
            [
                (OsType::Linux, OsArch::Amd64),
                (OsType::Windows, OsArch::Arm64)
            ]
        );
        assert!(offered(&[]).is_empty());
    }
}
