//! Compute providers for scaleset: the machines ephemeral runners run on.
//!
//! One async trait, [`Provider`] (create, delete, get, list by pool key,
//! remove all, start, stop, version), and two implementations:
//!
//! - [`ExternalProvider`] speaks the GARM external-provider executable
//!   protocol (interface v0.1.0 and v0.1.1) unchanged, so the existing
//!   `garm-provider-*` executables (LXD, Incus, OpenStack, AWS, Azure, GCP, OCI,
//!   Kubernetes) work as they are: `GARM_*` variables in a cleared
//!   environment (plus the variables the operator allows, matched as GARM
//!   matches them, and the proxy variables, as GARM passes them), bootstrap
//!   JSON ([`BootstrapInstance`]) on stdin, instance JSON
//!   ([`ProviderInstance`]) on stdout, exit code 30 for "not found" from
//!   `GetInstance`/`DeleteInstance` and 31 for "duplicate" from
//!   `CreateInstance`. Each call has a limit that kills the executable's whole
//!   process group (a create's is the scale set's bootstrap timeout), ends
//!   when the executable exits, reads bounded stdout/stderr buffers
//!   concurrently, and waits for a slot under a per-provider concurrency
//!   limit and, for creates, an optional rate ([`CallLimits`]; [`Limited`]
//!   puts any other provider under the same limits). Interface v0.1.0 is the default: it is what the current GARM
//!   providers implement.
//! - [`FakeProvider`] is an in-process, deterministic cloud ([`FakeCloud`]) for
//!   tests and the quick start, with switchable faults and a hook that
//!   receives each runner's JIT config.
//!
//! Configuration: [`RawProviderConfig`] is one `[[provider]]` TOML table;
//! [`ProviderConfig::from_raw_list`] validates them into [`ProviderConfig`]
//! reporting every problem at once ([`ConfigError`]).
//!
//! What this crate deliberately does not do: decide anything. It does not
//! retry, choose names, track state or log errors; callers (the `control`
//! crate) do, using [`Error`]'s predicates. It does not serve the metadata URL
//! that GARM providers' instances fetch their JIT config from, and it reads no
//! environment itself: allowed variables come from an [`EnvSource`].
//!
//! Main types: [`Provider`], [`ExternalProvider`], [`FakeProvider`]/[`FakeCloud`],
//! [`CreateRequest`] (a [`BootstrapInstance`] plus the runner's JIT config),
//! [`ProviderInstance`], [`Pool`]/[`PoolKey`], [`ProviderConfig`] and [`Error`].
//!
//! # Example
//!
//! ```
//! use scaleset_provider::{
//!     BootstrapInstance, CreateRequest, FakeCloud, InstanceStatus, OsArch, OsType, Pool, PoolKey,
//!     Provider, SecretString, UserDataOptions,
//! };
//! use uuid::Uuid;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), scaleset_provider::Error> {
//! let controller = Uuid::from_u128(1);
//! let cloud = FakeCloud::new();
//! cloud.on_create(|runner| println!("boot {} with its JIT config", runner.name));
//! let provider = cloud.provider(controller);
//!
//! let pool = Pool::new(PoolKey::for_scale_set(controller, scaleset_domain::GithubScaleSetId(7)));
//! let bootstrap = BootstrapInstance {
//!     name: "ci-abcdefgh".into(),
//!     tools: vec![],
//!     repo_url: "https://github.com/acme".into(),
//!     callback_url: "https://scaleset.example/callbacks".into(),
//!     metadata_url: "https://scaleset.example/metadata".into(),
//!     instance_token: SecretString::from("token"),
//!     ssh_keys: vec![],
//!     extra_specs: None,
//!     github_runner_group: "default".into(),
//!     ca_cert_bundle: None,
//!     arch: OsArch::Amd64,
//!     os_type: OsType::Linux,
//!     flavor: "small".into(),
//!     image: "ubuntu-24.04".into(),
//!     labels: vec![],
//!     pool_id: pool.key.clone(),
//!     user_data_options: UserDataOptions::default(),
//!     jit_config_enabled: true,
//!     proxy_config: None,
//! };
//! let request = CreateRequest {
//!     bootstrap,
//!     jit_config: Some(SecretString::from("encoded")),
//!     bootstrap_timeout: None,
//! };
//! let created = provider.create(&request).await?;
//! assert_eq!(created.status, InstanceStatus::Running);
//!
//! assert_eq!(provider.list(&pool).await?.len(), 1);
//! provider.delete(&pool, &created.id()).await?;
//! provider.delete(&pool, &created.id()).await?; // idempotent
//! assert!(provider.list(&pool).await?.is_empty());
//! # Ok(())
//! # }
//! ```

mod bootstrap;
mod build;
mod command;
mod config;
mod directory;
mod environment;
mod error;
mod external;
mod fake;
mod instance;
mod limit;
mod pool;
mod provider;

pub use bootstrap::{
    BootstrapInstance, CreateRequest, OsArch, OsType, ProxyConfig, RunnerTool, UserDataOptions,
};
pub use command::Command;
pub use config::{
    ConfigError, ConfigProblem, ExternalConfig, InterfaceVersion, ProviderConfig, ProviderKind,
    RawProviderConfig,
};
pub use directory::{Boot, BootInstance, DirectoryProvider, FAIL_CREATES, LEDGER, SLOW_CREATES};
pub use environment::{EnvAllowList, EnvSource, PROXY_VARIABLES, ProcessEnv};
pub use error::{Error, OutputProblem};
pub use external::ExternalProvider;
pub use fake::{CreatedRunner, FakeCloud, FakeInstance, FakeProvider};
pub use instance::{
    Address, INSTANCE_NAME_MAX, InstanceId, InstanceStatus, ProviderInstance, check_instance_name,
};
pub use limit::{Admission, CallLimits, CreateRate, Limited, Limiter, RateError};
pub use pool::{InvalidPoolKey, Pool, PoolKey};
pub use provider::Provider;
/// Secrets (the instance token, download tokens, the runner's JIT config): `secrecy`'s, the
/// type every scaleset crate holds; `Debug` redacts and the value is wiped on drop.
pub use secrecy::{ExposeSecret, SecretString};
