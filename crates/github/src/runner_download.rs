//! The runner application downloads of an entity ([`RunnerDownload`]): `GET
//! {api}/{repos/o/r|orgs/o|enterprises/e}/actions/runners/downloads`, the list GARM hands its
//! providers as `tools` (every OS and architecture GitHub builds the runner for).

use http::{HeaderValue, Method};
use secrecy::SecretString;
use serde::Deserialize;

use crate::call::{Auth, Call, Expect, Target};
use crate::client::Client;
use crate::config::Scope;
use crate::endpoint::Endpoint;
use crate::error::Result;
use crate::lenient::null_default;
use crate::wire::decode;

/// One runner application download, as GitHub lists it.
// No `PartialEq`: the download token is a secret and secrets are not compared.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct RunnerDownload {
    /// `linux`, `win` or `osx`.
    #[serde(default, deserialize_with = "null_default")]
    pub os: String,
    /// `x64`, `arm64` or `arm`.
    #[serde(default, deserialize_with = "null_default")]
    pub architecture: String,
    /// Where to download the archive.
    #[serde(default, deserialize_with = "null_default")]
    pub download_url: String,
    /// The archive's file name.
    #[serde(default, deserialize_with = "null_default")]
    pub filename: String,
    /// A short-lived token the download needs, when GitHub gives one (GHES may).
    #[serde(default)]
    pub temp_download_token: Option<SecretString>,
    /// Lowercase hex SHA-256 of the archive, when GitHub gives one.
    #[serde(default)]
    pub sha256_checksum: Option<String>,
}

impl Client {
    /// `GET {api}/{repos/o/r|orgs/o|enterprises/e}/actions/runners/downloads` with the PAT (or
    /// an installation token, one more REST call, for App credentials); expects 200. Entries
    /// without a `download_url` are dropped: no runner can be installed from them.
    pub async fn runner_downloads(&self) -> Result<Vec<RunnerDownload>> {
        let tokens = self.admin();
        let rest_token = tokens.rest_token().await?;
        let url = match self.config_url().scope() {
            Scope::Repository { owner, repo } => {
                tokens.rest_url(&["repos", owner, repo, "actions", "runners", "downloads"])
            }
            Scope::Organization { org } => {
                tokens.rest_url(&["orgs", org, "actions", "runners", "downloads"])
            }
            Scope::Enterprise { enterprise } => {
                tokens.rest_url(&["enterprises", enterprise, "actions", "runners", "downloads"])
            }
        };
        let call = Call {
            endpoint: Endpoint::RunnerDownloads,
            method: Method::GET,
            target: Target::Absolute(url),
            auth: Auth::Bearer(rest_token),
            headers: vec![(
                "accept",
                HeaderValue::from_static("application/vnd.github+json"),
            )],
            content_type: None,
            body: None,
            expect: Expect::Status(&[200]),
            long_poll: false,
            also_retry: &[],
        };
        let response = self.execute_rest(&call).await?;
        let downloads: Vec<RunnerDownload> =
            decode(call.endpoint, response.status, &response.body)?;
        Ok(downloads
            .into_iter()
            .filter(|d| !d.download_url.is_empty())
            .collect())
    }
}
