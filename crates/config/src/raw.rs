//! The file as written by the operator: every table refuses unknown keys, every value is
//! optional here so that validation can report all problems at once, naming each key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use scaleset_provider::RawProviderConfig;
use serde::Deserialize;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    pub(crate) controller_id: Option<String>,
    pub(crate) owner_label: Option<bool>,
    #[serde(default)]
    pub(crate) database: RawDatabase,
    #[serde(default)]
    pub(crate) encryption: RawEncryption,
    #[serde(default)]
    pub(crate) worker: RawWorker,
    #[serde(default)]
    pub(crate) server: RawServer,
    #[serde(default)]
    pub(crate) provider: Vec<RawProviderConfig>,
    pub(crate) fake: Option<RawFake>,
    #[serde(default)]
    pub(crate) credentials: Vec<RawCredentials>,
    #[serde(default)]
    pub(crate) scale_set: Vec<RawScaleSet>,
}

/// The top-level keys and tables, for environment overrides.
pub(crate) const TOP_LEVEL: [&str; 10] = [
    "controller_id",
    "owner_label",
    "database",
    "encryption",
    "worker",
    "server",
    "provider",
    "fake",
    "credentials",
    "scale_set",
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDatabase {
    pub(crate) url: Option<String>,
    pub(crate) pool_size: Option<i64>,
    pub(crate) busy_timeout: Option<String>,
    pub(crate) connect_timeout: Option<String>,
    pub(crate) event_retention: Option<i64>,
    pub(crate) sqlite_synchronous: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEncryption {
    pub(crate) primary_key_id: Option<String>,
    #[serde(default)]
    pub(crate) keys: Vec<RawKey>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKey {
    pub(crate) id: Option<String>,
    pub(crate) file: Option<PathBuf>,
    pub(crate) env: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorker {
    pub(crate) name: Option<String>,
    pub(crate) listen: Option<String>,
    pub(crate) lease_ttl: Option<String>,
    pub(crate) watch_interval: Option<String>,
    pub(crate) shutdown_timeout: Option<String>,
    pub(crate) backoff_base: Option<String>,
    pub(crate) backoff_max: Option<String>,
    pub(crate) refused_recheck: Option<String>,
    pub(crate) foreign_session_recheck: Option<String>,
    pub(crate) takeover_session_recheck: Option<String>,
    pub(crate) reconcile_interval: Option<String>,
    pub(crate) provider_backoff_base: Option<String>,
    pub(crate) provider_backoff_max: Option<String>,
    pub(crate) bootstrap_backoff_base: Option<String>,
    pub(crate) bootstrap_backoff_max: Option<String>,
    pub(crate) max_concurrent_starts: Option<i64>,
    pub(crate) max_concurrent_recoveries: Option<i64>,
    pub(crate) instance_api_url: Option<String>,
    /// Runner install templates scale sets may name: name → file.
    #[serde(default)]
    pub(crate) runner_install_templates: BTreeMap<String, PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    pub(crate) listen: Option<String>,
    pub(crate) tls_cert_file: Option<PathBuf>,
    pub(crate) tls_key_file: Option<PathBuf>,
    pub(crate) max_body_size: Option<i64>,
    pub(crate) header_read_timeout: Option<String>,
    pub(crate) idle_timeout: Option<String>,
    pub(crate) max_connections: Option<i64>,
    pub(crate) http2_max_concurrent_streams: Option<i64>,
    pub(crate) http2_max_header_list_size: Option<i64>,
    pub(crate) behind_tls_proxy: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFake {
    pub(crate) state_dir: Option<PathBuf>,
    pub(crate) simulator_url: Option<String>,
    pub(crate) allow: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCredentials {
    pub(crate) name: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) api_base_url: Option<String>,
    pub(crate) token_env: Option<String>,
    pub(crate) token_file: Option<PathBuf>,
    pub(crate) ca_bundle_file: Option<PathBuf>,
    pub(crate) trust_roots: Option<String>,
    /// The GitHub App form (`validate/app.rs`).
    pub(crate) app_id: Option<i64>,
    pub(crate) client_id: Option<String>,
    pub(crate) installation_id: Option<i64>,
    pub(crate) private_key_file: Option<PathBuf>,
    pub(crate) private_key_env: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScaleSet {
    pub(crate) name: Option<String>,
    pub(crate) credentials: Option<String>,
    pub(crate) organization: Option<String>,
    pub(crate) repository: Option<String>,
    pub(crate) enterprise: Option<String>,
    pub(crate) runner_group: Option<String>,
    #[serde(default)]
    pub(crate) labels: Vec<String>,
    pub(crate) disable_update: Option<bool>,
    pub(crate) provider: Option<String>,
    pub(crate) image: Option<String>,
    pub(crate) flavor: Option<String>,
    pub(crate) os_type: Option<String>,
    pub(crate) os_arch: Option<String>,
    /// The runners' proxy, SSH keys and user-data options (GARM's bootstrap).
    pub(crate) http_proxy: Option<String>,
    pub(crate) https_proxy: Option<String>,
    pub(crate) no_proxy: Option<String>,
    #[serde(default)]
    pub(crate) ssh_keys: Vec<String>,
    #[serde(default)]
    pub(crate) extra_packages: Vec<String>,
    pub(crate) disable_updates_on_boot: Option<bool>,
    pub(crate) enable_boot_debug: Option<bool>,
    pub(crate) runner_install_template: Option<String>,
    pub(crate) min_idle: Option<i64>,
    pub(crate) max_runners: Option<i64>,
    pub(crate) bootstrap_timeout: Option<String>,
    pub(crate) scale_down_delay: Option<String>,
    pub(crate) max_idle_lifetime: Option<String>,
    pub(crate) max_lifetime: Option<String>,
    pub(crate) runner_prefix: Option<String>,
    pub(crate) enabled: Option<bool>,
    pub(crate) adoption_policy: Option<String>,
    pub(crate) repair: Option<bool>,
    pub(crate) extra_specs: Option<toml::Value>,
    /// Written by `scalesetctl import garm` (`validate/takeover.rs`).
    pub(crate) takeover: Option<RawTakeover>,
}

/// A scale set's takeover note: which other manager ran it, under which GitHub id.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTakeover {
    pub(crate) from: Option<String>,
    pub(crate) controller_id: Option<String>,
    pub(crate) github_id: Option<i64>,
    pub(crate) garm_id: Option<i64>,
    pub(crate) pool_id: Option<String>,
    pub(crate) runner_prefix: Option<String>,
}

/// A fleet on its own: the text `POST /api/v1/plan` and `/apply` take.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFleet {
    #[serde(default)]
    pub(crate) credentials: Vec<RawCredentials>,
    #[serde(default)]
    pub(crate) scale_set: Vec<RawScaleSet>,
}
