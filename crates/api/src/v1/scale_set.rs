//! `/api/v1/scale-sets`: desired scale sets, what adoption found on GitHub, their visible state
//! and event trail.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Which same-name scale sets found on GitHub may be adopted (`docs/adoption.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AdoptionPolicy {
    /// A same-name scale set we hold no record of is refused.
    Never,
    /// Adopt only on ownership evidence (the default).
    #[default]
    Owned,
    /// Adopt unless there is evidence of a live foreign owner.
    Any,
}

/// How this controller came to hold the GitHub scale set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Provenance {
    /// This controller created it: deleting the scale set deletes it on GitHub.
    Created,
    /// The stored GitHub id was confirmed: deleting detaches (unless `force`).
    Known,
    /// Adopted on evidence or policy: deleting detaches (unless `force`).
    Adopted,
}

/// Ownership evidence the last ensure saw (the adoption machine's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub enum Evidence {
    /// The ensure that recorded it created it.
    CreatedThisRun,
    /// The stored GitHub id names it.
    StoredId,
    /// It carries this controller's owner label.
    OwnerLabel,
    /// A session conflict named this controller's session owner.
    OwnSession,
    /// Imported from GARM: the declared takeover note names its GitHub id and name.
    ImportedFrom,
}

/// The visible state of a scale set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ScaleSetState {
    /// Not yet ensured on GitHub.
    Pending,
    /// Ensured; being served.
    Ready,
    /// Adoption refused: `state_reason` says why and what to do.
    Refused,
    /// Adopted, but labels or settings differ from the spec and `repair` is off.
    Drifted,
    /// A listener other than this controller's current one holds the message session:
    /// another owner's, one GitHub does not name, or our own from before a crash
    /// (`state_reason` says which is known).
    ForeignSession,
    /// GitHub deleted it; waiting to be ensured again.
    Dormant,
    /// Failing; being retried (see `state_reason`).
    Error,
}

/// Why an operator should look at a scale set, and what to run. The server decides it by the
/// store's one rule (a state that needs attention, a failing provider, or jobs waiting longer
/// than the bootstrap timeout), the same the status page and the metrics count by; a client
/// counts a scale set that carries one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Attention {
    /// The reason in words.
    pub reason: String,
    /// A `scalesetctl` command that shows or fixes it.
    pub remedy: String,
}

/// A scale set's spec as stored (what the operator asked for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScaleSetSpec {
    /// The scale set's name on GitHub.
    pub name: String,
    /// The runner group's name.
    pub runner_group: String,
    /// GitHub's id of the runner group, once resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_group_id: Option<i64>,
    /// Labels (the owner label is added on GitHub, not listed here).
    pub labels: Vec<String>,
    /// GitHub's `disableUpdate`.
    pub disable_update: bool,
    /// The provider's name (a `[[provider]]` of the configuration).
    pub provider: String,
    /// The provider image.
    pub image: String,
    /// The provider flavor.
    pub flavor: String,
    /// The runners' operating system as GARM spells it: `linux`, `windows` or `osx`.
    pub os_type: String,
    /// The runners' CPU architecture as GARM spells it: `amd64`, `arm64`, `arm` or `386`.
    pub os_arch: String,
    /// The runners' `http_proxy` (GARM's `proxy_config`; the worker's own proxy is not the
    /// runners').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// The runners' `https_proxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// The runners' `no_proxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
    /// SSH public keys for the runner user (GARM's `ssh-keys`).
    pub ssh_keys: Vec<String>,
    /// Packages installed on first boot besides the provider's own.
    pub extra_packages: Vec<String>,
    /// Skip the operating system's updates on first boot.
    pub disable_updates_on_boot: bool,
    /// Verbose boot logging.
    pub enable_boot_debug: bool,
    /// The runner install template the set names (one of the worker's
    /// `worker.runner_install_templates`); none: the provider's built-in script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_install_template: Option<String>,
    /// Idle runners kept warm.
    pub min_idle: u32,
    /// The most runners at once.
    pub max_runners: u32,
    /// How long an instance may take to register, in seconds.
    pub bootstrap_timeout_secs: u64,
    /// How long surplus idle runners stay after a burst, seconds (0: retired at once).
    pub scale_down_delay_secs: u64,
    /// How long a runner may idle while no job waits before it is retired, seconds (0: off).
    pub max_idle_lifetime_secs: u64,
    /// How long a runner may live before it is retired once idle, seconds (0: off).
    pub max_lifetime_secs: u64,
    /// The runner name prefix (empty: the scale set's name).
    pub runner_prefix: String,
    /// Provider-specific settings, passed through.
    #[schema(value_type = Object)]
    pub extra_specs: serde_json::Value,
    /// Whether the scale set is served.
    pub enabled: bool,
    /// The adoption policy.
    pub adoption_policy: AdoptionPolicy,
    /// Whether adoption may repair drift (PATCH labels and settings on GitHub).
    pub repair: bool,
}

/// `POST /api/v1/scale-sets`. The server stores it, then runs the adoption machine against
/// GitHub at once and answers with the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateScaleSet {
    /// The entity (repository, organization, enterprise) it belongs to.
    pub entity_id: uuid::Uuid,
    /// The name on GitHub: 1–100 of `A-Za-z0-9._-`, starting with a letter or digit, not
    /// starting with `scaleset-owner-` (any case).
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^(?![Ss][Cc][Aa][Ll][Ee][Ss][Ee][Tt]-[Oo][Ww][Nn][Ee][Rr]-)[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
    )]
    pub name: String,
    /// The runner group's name (default `Default`): 1–100 characters, no control characters
    /// or commas, no leading or trailing spaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000,\\x00-\\x1f\\x7f-\\x9f](?:[^,\\x00-\\x1f\\x7f-\\x9f]*[^\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000,\\x00-\\x1f\\x7f-\\x9f])?$"
    )]
    pub runner_group: Option<String>,
    /// At most 50 labels, each 1–100 characters without control characters or commas, no
    /// leading or trailing spaces, not starting with `scaleset-owner-` (any case).
    #[serde(default)]
    #[schema(schema_with = labels_schema)]
    pub labels: Vec<String>,
    /// GitHub's `disableUpdate` (default false).
    #[serde(default)]
    pub disable_update: bool,
    /// The provider's name: 1–64 of `A-Za-z0-9._-`, starting with a letter or digit.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
    )]
    pub provider: String,
    /// The provider image (default empty): at most 1000 characters, no control characters.
    #[serde(default)]
    #[schema(max_length = 1000, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub image: String,
    /// The provider flavor (default empty): at most 1000 characters, no control characters.
    #[serde(default)]
    #[schema(max_length = 1000, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub flavor: String,
    /// The runners' operating system as GARM spells it (default `linux`): sent to the
    /// provider as `os_type`, which picks the runner download for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(linux|windows|osx)$")]
    pub os_type: Option<String>,
    /// The runners' CPU architecture as GARM spells it (default `amd64`): sent to the
    /// provider as `arch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(amd64|arm64|arm|386)$")]
    pub os_arch: Option<String>,
    /// The runners' `http_proxy` (GARM's `proxy_config`; not the worker's own proxy): at most 8192
    /// characters, no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub http_proxy: Option<String>,
    /// The runners' `https_proxy` (GARM's `proxy_config`; not the worker's own proxy): at most 8192
    /// characters, no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub https_proxy: Option<String>,
    /// The runners' `no_proxy` (GARM's `proxy_config`; not the worker's own proxy): at most 8192
    /// characters, no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub no_proxy: Option<String>,
    /// SSH public keys for the runner user (GARM's `ssh-keys`; default none): at most 100, one
    /// line each.
    #[serde(default)]
    #[schema(schema_with = ssh_keys_schema)]
    pub ssh_keys: Vec<String>,
    /// Packages installed on first boot besides the provider's own (default none): at most
    /// 100 names.
    #[serde(default)]
    #[schema(schema_with = packages_schema)]
    pub extra_packages: Vec<String>,
    /// Skip the operating system's updates on first boot (default false).
    #[serde(default)]
    pub disable_updates_on_boot: bool,
    /// Verbose boot logging (default false).
    #[serde(default)]
    pub enable_boot_debug: bool,
    /// A runner install template of the worker's configuration
    /// (`worker.runner_install_templates`), sent as GARM sends a scale set's template
    /// (default none: the provider's built-in install script).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
    pub runner_install_template: Option<String>,
    /// Idle runners kept warm (default 0; at most `max_runners`).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10000)]
    pub min_idle: u32,
    /// The most runners at once (1–10000).
    #[schema(minimum = 1, maximum = 10000)]
    pub max_runners: u32,
    /// How long an instance may take to register, seconds (default 600, 1–86400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 86400)]
    pub bootstrap_timeout_secs: Option<u64>,
    /// How long surplus idle runners stay after a burst, seconds (default 0: retired at once;
    /// at most 2592000, 30 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2592000)]
    pub scale_down_delay_secs: Option<u64>,
    /// How long a runner may idle while no job waits, seconds (default 0: off; at most
    /// 2592000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2592000)]
    pub max_idle_lifetime_secs: Option<u64>,
    /// How long a runner may live before it is retired once idle, seconds (default 0: off; at
    /// most 2592000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2592000)]
    pub max_lifetime_secs: Option<u64>,
    /// The runner name prefix (default empty: the name); same characters as a name, at most
    /// 40.
    #[serde(default)]
    #[schema(max_length = 40, pattern = "^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,39})?$")]
    pub runner_prefix: String,
    /// Provider-specific settings (default `{}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra_specs: Option<serde_json::Value>,
    /// Whether it is served (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The adoption policy (default `owned`).
    #[serde(default)]
    pub adoption_policy: AdoptionPolicy,
    /// Whether adoption may repair drift (default false).
    #[serde(default)]
    pub repair: bool,
}

/// `PATCH /api/v1/scale-sets/{id}`: the fields to change, at a generation.
///
/// The precondition is the body's `generation` (required): the change is applied only if it
/// is the stored generation, else 409 `stale_generation` and nothing is written. Name, runner
/// group and entity cannot change (they identify the scale set on GitHub: create another).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateScaleSet {
    /// The generation this change was made against (from the last read).
    pub generation: i64,
    /// New labels (the same rules as on create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = optional_labels_schema)]
    pub labels: Option<Vec<String>>,
    /// New `disableUpdate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_update: Option<bool>,
    /// New provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
    )]
    pub provider: Option<String>,
    /// New image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub image: Option<String>,
    /// New flavor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub flavor: Option<String>,
    /// New operating system (`linux`, `windows`, `osx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(linux|windows|osx)$")]
    pub os_type: Option<String>,
    /// New CPU architecture (`amd64`, `arm64`, `arm`, `386`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(amd64|arm64|arm|386)$")]
    pub os_arch: Option<String>,
    /// The runners' `http_proxy` (`""` clears it) (GARM's `proxy_config`; not the worker's own proxy): at most 8192
    /// characters, no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub http_proxy: Option<String>,
    /// The runners' `https_proxy` (`""` clears it) (GARM's `proxy_config`; not the worker's own proxy): at most 8192
    /// characters, no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub https_proxy: Option<String>,
    /// The runners' `no_proxy` (`""` clears it) (GARM's `proxy_config`; not the worker's own proxy): at most 8192
    /// characters, no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub no_proxy: Option<String>,
    /// New SSH public keys (replace the list; `[]` clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = optional_ssh_keys_schema)]
    pub ssh_keys: Option<Vec<String>>,
    /// New extra packages (replace the list; `[]` clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = optional_packages_schema)]
    pub extra_packages: Option<Vec<String>>,
    /// Skip the operating system's updates on first boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_updates_on_boot: Option<bool>,
    /// Verbose boot logging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_boot_debug: Option<bool>,
    /// New runner install template (`""`: none, the provider's built-in script).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^([A-Za-z0-9][A-Za-z0-9._-]{0,63})?$")]
    pub runner_install_template: Option<String>,
    /// New idle count (at most the maximum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 10000)]
    pub min_idle: Option<u32>,
    /// New maximum (1–10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 10000)]
    pub max_runners: Option<u32>,
    /// New bootstrap timeout, seconds (1–86400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 86400)]
    pub bootstrap_timeout_secs: Option<u64>,
    /// New scale-down delay, seconds (0–2592000; 0: retired at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2592000)]
    pub scale_down_delay_secs: Option<u64>,
    /// New idle lifetime, seconds (0–2592000; 0: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2592000)]
    pub max_idle_lifetime_secs: Option<u64>,
    /// New lifetime, seconds (0–2592000; 0: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2592000)]
    pub max_lifetime_secs: Option<u64>,
    /// New runner prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 40, pattern = "^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,39})?$")]
    pub runner_prefix: Option<String>,
    /// New provider settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra_specs: Option<serde_json::Value>,
    /// Serve it or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// New adoption policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adoption_policy: Option<AdoptionPolicy>,
    /// Repair drift or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<bool>,
}

/// Why adoption refused the scale set, with what to do: on every read while the state is
/// `refused`, `drifted` or `foreign_session` (stored as the machine's refusal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Refusal {
    /// The adoption machine's refusal code (`ForeignOwner`, `ScaleSetExists`, …).
    pub code: String,
    /// What was found.
    pub message: String,
    /// What the operator can do.
    pub remedy: String,
}

/// One entry of a scale set's event trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// Increases with every event.
    pub id: i64,
    /// What happened (`ready`, `refused`, `create_intent`, `notice`, `warning`, …).
    pub kind: String,
    /// Why, as a stable snake_case code (`provider_failing`, `foreign_owner`, …): compare
    /// this, not `reason`, whose words and counters change; `unspecified` for an entry written
    /// before codes were kept. A repeat is the same `kind` and `code`.
    #[serde(default)]
    pub code: String,
    /// The detail, for people: the newest occurrence's text.
    pub reason: String,
    /// When it happened first (RFC 3339).
    pub at: String,
    /// How many times in a row it happened: a recheck that finds the same refusal or error
    /// counts here instead of adding an event (1 when it happened once).
    pub count: u64,
    /// When it happened last (RFC 3339; equal to `at` when `count` is 1).
    pub last_at: String,
}

/// A scale set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScaleSet {
    /// The id.
    pub id: uuid::Uuid,
    /// The entity it belongs to.
    pub entity_id: uuid::Uuid,
    /// The optimistic-concurrency generation: give it back on update and delete.
    pub generation: i64,
    /// The spec.
    pub spec: ScaleSetSpec,
    /// GitHub's id, once ensured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github_id: Option<i64>,
    /// How it came to be ours, once ensured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The ownership evidence the last ensure saw (empty before the first, and for an
    /// adoption on policy alone).
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// The visible state.
    pub state: ScaleSetState,
    /// Why it is in that state (for a refusal: the code, what was found, and what to do).
    pub state_reason: String,
    /// The adoption machine's refusal, while the state is one (`refused`, `drifted`,
    /// `foreign_session`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// The runner count the scaler wants.
    pub desired_runners: u32,
    /// Jobs waiting for a runner, as GitHub's last statistics said.
    #[serde(default)]
    pub jobs_waiting: u32,
    /// Present when the scale set needs attention: why, and the command to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<Attention>,
    /// The newest events, newest first (on show, create and drain; empty in lists).
    #[serde(default)]
    pub events: Vec<Event>,
    /// The runner download a new runner of this scale set would get from the entity's list
    /// as a worker last read it (the one for the set's `os_type`/`os_arch`, as
    /// garm-provider-common picks it); null when there is none or no list has been read yet
    /// (`warnings` says which), and in lists.
    #[serde(default)]
    pub runner_tool: Option<RunnerTool>,
    /// What the scale set needs before its runners can be created, each with what to do: no
    /// download for its OS/architecture in the entity's list (the provider would refuse every
    /// runner), no list read yet, or the last read failed. Empty when all is well, and in lists.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The worker serving it: the holder of its lease as the store has it, and whether that
    /// lease is current or in doubt; null when no worker holds it (never served yet, released
    /// on a clean stop or a disable, or the fleet is down).
    #[serde(default)]
    pub served_by: Option<ServedBy>,
    /// Whether the server's configuration file declares it. A declared scale set's spec is
    /// the file's (an update through the API is 409 `declared`; drain and enable go through)
    /// and a database loss restores it; one that is not declared (made through the API, or
    /// applied from another fleet) exists only in the database: lost on a database loss
    /// (`scalesetctl fleet export` writes it as a fleet file).
    #[serde(default)]
    pub declared: bool,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it was last written (RFC 3339).
    pub updated_at: String,
}

/// Which worker serves a scale set: the holder of its lease (`docs/operations.md`,
/// "Partitions").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ServedBy {
    /// The worker's name (its `worker.name`).
    pub worker: String,
    /// Whether the lease is current or in doubt.
    pub lease: LeaseStatus,
    /// When the lease expires unless its holder renews it (RFC 3339); in the past for a lease
    /// in doubt that ran out.
    pub expires_at: String,
}

/// The state of the lease of the worker serving a scale set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LeaseStatus {
    /// Renewed within its TTL: the worker serves the scale set.
    Held,
    /// In doubt: the lease ran out without being released (its worker is cut off from the
    /// database, paused or dead, and no other worker has taken the set over yet), or the
    /// worker answering could not renew it (it has fenced itself: it creates and acknowledges
    /// nothing on the set). Another worker takes it over within a watch interval of the
    /// expiry; until then nobody serves the set.
    InDoubt,
}

/// The runner download a new runner of a scale set would get (GARM's `tools` entry for its
/// OS and architecture), in GitHub's spelling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RunnerTool {
    /// GitHub's `os`: `linux`, `win` or `osx`.
    pub os: String,
    /// GitHub's `architecture`: `x64`, `arm64` or `arm`.
    pub architecture: String,
    /// The archive's file name.
    pub filename: String,
    /// Where the runner downloads it from.
    pub download_url: String,
    /// Lowercase hex SHA-256 of the archive, when GitHub gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_checksum: Option<String>,
    /// When a worker read the entity's list (RFC 3339).
    pub read_at: String,
}

/// `GET /api/v1/scale-sets`: one page, by name, then runner group, then id (events are not
/// included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScaleSetList {
    /// The items of this page.
    pub items: Vec<ScaleSet>,
    /// How many of the listed scale sets (every page's, not only this one's) are not declared
    /// in the server's configuration file: they exist only in the database, and are lost on a
    /// database loss.
    #[serde(default)]
    pub not_declared: u32,
    /// Pass it as `cursor` to get the next page; null on the last page.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

impl super::Paged for ScaleSetList {
    fn next_cursor(&self) -> Option<&str> {
        self.next_cursor.as_deref()
    }

    fn append(&mut self, next: Self) {
        self.items.extend(next.items);
        self.next_cursor = next.next_cursor;
    }
}

/// `GET /api/v1/github/ours-undeclared`: scale sets on GitHub that carry this controller's
/// owner label but that the store does not hold and the configuration file does not declare
/// (after a database loss: the ones made through the API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OursUndeclaredList {
    /// The scale sets, by entity then name.
    pub items: Vec<OursUndeclared>,
    /// Entities whose scale sets GitHub did not list, and why (their sets are not judged).
    #[serde(default)]
    pub unlisted: Vec<UnlistedEntity>,
}

/// One scale set that is ours on GitHub and declared nowhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OursUndeclared {
    /// The entity (`organization acme`).
    pub entity: String,
    /// GitHub's id.
    pub github_id: i64,
    /// Its name.
    pub name: String,
    /// Its runner group's name on GitHub.
    pub runner_group: String,
    /// The two remedies: declare it, or decommission it.
    pub remedy: String,
}

/// An entity whose scale sets GitHub did not list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UnlistedEntity {
    /// The entity.
    pub entity: String,
    /// What failed.
    pub reason: String,
}

/// What a delete did on GitHub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DeleteAction {
    /// Only the record was removed; the GitHub scale set is untouched (adopted or known, no
    /// `force`; or never ensured). `reason` says which.
    Detached,
    /// The GitHub scale set was deleted too (created by this controller, or `force`).
    #[serde(rename = "deleted_on_github")]
    DeletedOnGitHub,
}

/// The answer to `DELETE /api/v1/scale-sets/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeleteScaleSetResult {
    /// The deleted scale set's id.
    pub id: uuid::Uuid,
    /// What happened on GitHub.
    pub action: DeleteAction,
    /// GitHub's id of the scale set, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github_id: Option<i64>,
    /// The stored provenance the decision was made from, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Why GitHub's scale set was deleted or left in place, for people (e.g. "GitHub scale
    /// set 8 is left in place: it was adopted on owner label, …").
    pub reason: String,
}

/// The pattern of one label: 1–100 characters, no control characters or commas, no leading
/// or trailing white space, not an owner label.
const LABEL_PATTERN: &str = "^(?![Ss][Cc][Aa][Ll][Ee][Ss][Ee][Tt]-[Oo][Ww][Nn][Ee][Rr]-)[^\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000,\\x00-\\x1f\\x7f-\\x9f](?:[^,\\x00-\\x1f\\x7f-\\x9f]*[^\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000,\\x00-\\x1f\\x7f-\\x9f])?$";

fn label_array() -> utoipa::openapi::schema::ArrayBuilder {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(100))
                .pattern(Some(LABEL_PATTERN)),
        )
        .max_items(Some(50))
        .description(Some(
            "At most 50 labels, each 1–100 characters without control characters or commas, \
             no leading or trailing spaces, not starting with `scaleset-owner-` (any case)",
        ))
}

/// The labels of a create: at most 50, each a label.
fn labels_schema() -> utoipa::openapi::schema::Array {
    label_array().build()
}

/// The labels of an update: as on create, or null (unchanged).
fn optional_labels_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{SchemaType, Type};
    label_array()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .build()
}

/// The answer to `POST /api/v1/scale-sets/{id}/drain`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DrainScaleSetResult {
    /// The scale set, disabled (no longer served: no session, no new runners), with its
    /// events.
    pub scale_set: ScaleSet,
    /// Instances still recorded: busy runners finishing their jobs, and idle ones the worker
    /// has yet to retire.
    pub instances: u64,
    /// Of those, how many run a job.
    pub busy: u64,
    /// No instance is left and no worker holds the scale set: a delete goes through now.
    pub drained: bool,
}

/// The answer to `POST /api/v1/scale-sets/{id}/retry`: the request is recorded; the worker
/// serving the scale set acts on it at its next watch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RetryScaleSetResult {
    /// The scale set, with its events (a `retry_requested` event first).
    pub scale_set: ScaleSet,
    /// When the retry was asked for (RFC 3339).
    pub requested_at: String,
    /// The worker holding the scale set's lease, which acts on the request; `None` when no
    /// worker serves it now (its next worker starts without a back-off).
    pub served_by: Option<String>,
    /// What happens now, in words.
    pub reason: String,
}

/// SSH key lines: not blank, no control characters.
const SSH_KEY_PATTERN: &str =
    "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$";
/// Package names: no whitespace or control characters.
const PACKAGE_PATTERN: &str = "^[^\\s\\x00-\\x1f\\x7f-\\x9f]+$";

/// At most 100 strings of at most 8192 characters matching `pattern`, or (`nullable`) null.
fn setup_list(pattern: &str, nullable: bool) -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let array = ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(8192))
                .pattern(Some(pattern)),
        )
        .max_items(Some(100));
    if nullable {
        array
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .build()
    } else {
        array.build()
    }
}

fn ssh_keys_schema() -> utoipa::openapi::schema::Array {
    setup_list(SSH_KEY_PATTERN, false)
}

fn optional_ssh_keys_schema() -> utoipa::openapi::schema::Array {
    setup_list(SSH_KEY_PATTERN, true)
}

fn packages_schema() -> utoipa::openapi::schema::Array {
    setup_list(PACKAGE_PATTERN, false)
}

fn optional_packages_schema() -> utoipa::openapi::schema::Array {
    setup_list(PACKAGE_PATTERN, true)
}
