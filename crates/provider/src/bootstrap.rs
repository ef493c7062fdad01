//! What a provider needs to create an instance: the bootstrap parameters
//! (serialized exactly as GARM's `BootstrapInstance`, the JSON GARM providers
//! read on stdin), the secrets inside them, and the create request.

use std::time::Duration;

use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};
use serde::{Serialize, Serializer};

use crate::pool::PoolKey;

/// Serializes a secret as itself: the bootstrap JSON is the one place a secret is written
/// out (secrecy's `SecretString` has no `Serialize`, so each such field names this on purpose).
fn exposed<S: Serializer>(secret: &SecretString, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(secret.expose_secret())
}

/// [`exposed`] for an optional secret (the field is skipped when `None`).
fn exposed_option<S: Serializer>(
    secret: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => exposed(secret, serializer),
        None => serializer.serialize_none(),
    }
}

/// Target operating system (GARM's `os_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OsType {
    /// Linux.
    Linux,
    /// Windows.
    Windows,
    /// macOS (`osx`).
    Osx,
    /// Not known.
    Unknown,
}

/// Target CPU architecture (GARM's `arch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OsArch {
    /// x86-64.
    Amd64,
    /// 32-bit x86 (GARM spells it `386`).
    #[serde(rename = "386")]
    I386,
    /// 64-bit ARM.
    Arm64,
    /// 32-bit ARM.
    Arm,
}

/// One downloadable runner package (GitHub's runner application download).
// No `PartialEq` here nor on the types holding secrets below: secrets are not compared.
#[derive(Debug, Clone, Serialize, Default)]
pub struct RunnerTool {
    /// `linux`, `win`, `osx`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// `x64`, `arm64`, `arm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// Where to download the package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    /// The package's file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// A temporary token for the download, when GitHub requires one.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "exposed_option"
    )]
    pub temp_download_token: Option<SecretString>,
    /// SHA-256 of the package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256_checksum: Option<String>,
}

/// Serializes an empty list as `null`, as GARM does (a Go nil slice): GARM sends
/// `"ssh-keys": null` and `"extra_packages": null` when there are none.
fn null_when_empty<S: Serializer>(list: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    if list.is_empty() {
        serializer.serialize_none()
    } else {
        list.serialize(serializer)
    }
}

/// Serializes an unset proxy setting as `""`, as GARM does (a Go `string`).
fn empty_when_none<S: Serializer>(
    value: &Option<String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value.as_deref().unwrap_or_default())
}

/// Options for the user data providers generate (GARM's `user_data_options`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct UserDataOptions {
    /// Skip OS updates on first boot.
    pub disable_updates_on_boot: bool,
    /// Extra packages to install (`null` when none, as GARM sends it).
    #[serde(serialize_with = "null_when_empty")]
    pub extra_packages: Vec<String>,
    /// Verbose boot logging.
    pub enable_boot_debug: bool,
}

/// The proxy the instance's runner goes through (GARM's `proxy_config`, GARM #822): the
/// scale set's, never the worker's own. GARM sends all three keys on every create, as empty
/// strings when unset; so do we.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct ProxyConfig {
    /// `http_proxy` (`""` when unset).
    #[serde(serialize_with = "empty_when_none")]
    pub http_proxy: Option<String>,
    /// `https_proxy` (`""` when unset).
    #[serde(serialize_with = "empty_when_none")]
    pub https_proxy: Option<String>,
    /// `no_proxy` (`""` when unset).
    #[serde(serialize_with = "empty_when_none")]
    pub no_proxy: Option<String>,
}

/// The bootstrap parameters, serialized with the exact JSON field names of
/// GARM's `BootstrapInstance` (garm-provider-common `params`), which GARM
/// providers read (note the dashes in `callback-url`, `metadata-url`,
/// `instance-token`, `ssh-keys`, `github-runner-group`, `ca-cert-bundle`).
///
/// `Debug` redacts the instance token.
#[derive(Debug, Clone, Serialize)]
pub struct BootstrapInstance {
    /// The instance (runner) name.
    pub name: String,
    /// Runner packages the instance may download.
    pub tools: Vec<RunnerTool>,
    /// The repository, organization or enterprise URL the runner registers with.
    pub repo_url: String,
    /// Where the instance reports status.
    #[serde(rename = "callback-url")]
    pub callback_url: String,
    /// Where the instance fetches its setup data (including the JIT config).
    #[serde(rename = "metadata-url")]
    pub metadata_url: String,
    /// Bearer token the instance uses for the callback and metadata URLs.
    #[serde(rename = "instance-token", serialize_with = "exposed")]
    pub instance_token: SecretString,
    /// SSH public keys to install, if the provider supports it (`null` when none, as GARM
    /// sends it).
    #[serde(rename = "ssh-keys", serialize_with = "null_when_empty")]
    pub ssh_keys: Vec<String>,
    /// Provider-specific JSON (omitted when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_specs: Option<serde_json::Value>,
    /// The GitHub runner group.
    #[serde(rename = "github-runner-group")]
    pub github_runner_group: String,
    /// The PEM CA bundle of the credentials' endpoint, for the runner to trust (a GHES with
    /// a private CA), sent base64-encoded (Go `[]byte`); `""` when none, as GARM sends it.
    #[serde(rename = "ca-cert-bundle", serialize_with = "as_base64")]
    pub ca_cert_bundle: Option<Vec<u8>>,
    /// CPU architecture.
    pub arch: OsArch,
    /// Operating system.
    pub os_type: OsType,
    /// Provider flavor (machine size, LXD profile, ...).
    pub flavor: String,
    /// Provider image.
    pub image: String,
    /// Runner labels.
    pub labels: Vec<String>,
    /// The pool key (`GARM_POOL_ID` carries the same value).
    pub pool_id: PoolKey,
    /// User-data options.
    pub user_data_options: UserDataOptions,
    /// Tell the instance to fetch a JIT config from the metadata URL instead of
    /// a registration token.
    pub jit_config_enabled: bool,
    /// Proxy settings for the runner; `None` sends GARM's empty one (see [`ProxyConfig`]).
    #[serde(serialize_with = "proxy_or_empty")]
    pub proxy_config: Option<ProxyConfig>,
}

fn as_base64<S: Serializer>(bytes: &Option<Vec<u8>>, serializer: S) -> Result<S::Ok, S::Error> {
    match bytes {
        Some(bytes) => {
            serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        None => serializer.serialize_str(""),
    }
}

fn proxy_or_empty<S: Serializer>(
    proxy: &Option<ProxyConfig>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    proxy.clone().unwrap_or_default().serialize(serializer)
}

/// A request to create one instance.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    /// Sent to external executables on stdin.
    pub bootstrap: BootstrapInstance,
    /// The runner's JIT config. External executables never receive it (GARM
    /// providers fetch it from `metadata-url` with the instance token); the
    /// fake provider hands it to its hook so a simulated runner can boot.
    pub jit_config: Option<SecretString>,
    /// The scale set's bootstrap timeout. As GARM bounds a create by it, an
    /// external provider's `CreateInstance` is killed after this long unless
    /// the provider configures `create_timeout`; `None` means GARM's default,
    /// [`crate::ExternalConfig::DEFAULT_BOOTSTRAP_TIMEOUT`].
    pub bootstrap_timeout: Option<Duration>,
}

#[cfg(test)]
mod tests;
