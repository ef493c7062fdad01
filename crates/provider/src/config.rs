//! `[[provider]]` configuration: the raw TOML shape (serde, unknown fields
//! refused) and its validation into typed settings, reporting every problem at
//! once. No filesystem checks happen here: a missing executable is reported
//! when it is run ([`crate::Error::Spawn`]).

use std::fmt;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::environment::EnvAllowList;
use crate::limit::{CallLimits, CreateRate};

/// One `[[provider]]` table as written by the operator.
///
/// Fields are public so environment overrides can be applied before
/// validation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProviderConfig {
    /// Unique provider name that scale sets refer to.
    pub name: Option<String>,
    /// `external` (a GARM provider executable) or `fake` (in-process, for tests
    /// and the quick start).
    pub kind: Option<String>,
    /// Absolute path of the provider executable (external only).
    pub executable: Option<PathBuf>,
    /// Absolute path of the provider's own config file, passed as
    /// `GARM_PROVIDER_CONFIG_FILE` (external only).
    pub config_file: Option<PathBuf>,
    /// `v0.1.0` (default, as in GARM) or `v0.1.1` (external only).
    pub interface_version: Option<String>,
    /// Operator variables passed through, GARM's `environment_variables`:
    /// every entry is a prefix (`OS_`, `OS_*`), `NAME=` one exact name
    /// (external only).
    #[serde(default)]
    pub environment: Vec<String>,
    /// Whether `http_proxy`, `https_proxy`, `no_proxy` and their upper-case
    /// forms are passed through when set, as GARM always does (external only;
    /// default true).
    pub forward_proxy_variables: Option<bool>,
    /// Limit of every call but `CreateInstance`, e.g. `"20m"` (external only;
    /// default 20m).
    pub timeout: Option<String>,
    /// Limit of `CreateInstance` (external only; default: the scale set's
    /// bootstrap timeout, as GARM bounds a create by it).
    pub create_timeout: Option<String>,
    /// Maximum simultaneous calls of the executable (external only; default
    /// 1,000: [`crate::CallLimits::DEFAULT_CONCURRENCY`]).
    pub concurrency: Option<i64>,
    /// Creates allowed to start per second, minute or hour, `"N/s"`, `"N/m"`
    /// or `"N/h"`, for a cloud whose API throttles creates (external only;
    /// default: no limit).
    pub create_rate: Option<String>,
}

/// A validated provider configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The provider's name.
    pub name: String,
    /// What kind of provider it is.
    pub kind: ProviderKind,
}

/// The kind of a provider and its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderKind {
    /// A GARM external-provider executable.
    External(ExternalConfig),
    /// The in-process fake provider.
    Fake,
}

/// The GARM external-provider interface version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InterfaceVersion {
    /// v0.1.0: the original environment. The default, and what the current
    /// releases of the GARM providers implement.
    V010,
    /// v0.1.1: adds `GARM_POOL_ID` and `GARM_POOL_EXTRASPECS` to the
    /// single-instance commands, and `GARM_POOL_EXTRASPECS` to `ListInstances`
    /// and `CreateInstance`. Only for a provider built to accept it: one that
    /// implements only v0.1.0 fails every call.
    V011,
}

impl InterfaceVersion {
    /// The value passed in `GARM_INTERFACE_VERSION` (providers compare it
    /// exactly, leading `v` included).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V010 => "v0.1.0",
            Self::V011 => "v0.1.1",
        }
    }
}

impl fmt::Display for InterfaceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Settings of an external provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalConfig {
    /// The executable (absolute path).
    pub executable: PathBuf,
    /// The provider's config file (absolute path), `GARM_PROVIDER_CONFIG_FILE`.
    pub config_file: PathBuf,
    /// The interface version spoken.
    pub interface_version: InterfaceVersion,
    /// Operator variables passed through.
    pub environment: EnvAllowList,
    /// Whether the proxy variables ([`crate::PROXY_VARIABLES`]) are passed
    /// through when set, whatever `environment` says (GARM always does).
    pub forward_proxy_variables: bool,
    /// Limit of every call but `CreateInstance`; on expiry the executable's
    /// process group is killed.
    pub timeout: Duration,
    /// Limit of `CreateInstance`. `None`: the request's bootstrap timeout
    /// ([`crate::CreateRequest::bootstrap_timeout`]), or
    /// [`ExternalConfig::DEFAULT_BOOTSTRAP_TIMEOUT`] when it has none.
    pub create_timeout: Option<Duration>,
    /// Maximum simultaneous calls.
    pub concurrency: NonZeroUsize,
    /// How fast creates may start (`None`: as fast as they are asked for).
    pub create_rate: Option<CreateRate>,
    /// Bound on stdout; more is [`crate::OutputProblem::TooLarge`].
    pub stdout_limit: usize,
    /// Bound on the stderr tail kept for errors.
    pub stderr_limit: usize,
}

impl ExternalConfig {
    /// Default limit of every call but `CreateInstance`. GARM sets none; a
    /// limit still ends a hung executable, and 20 minutes is far above what
    /// the slow paths of real providers take (Azure's chained deletes,
    /// OpenStack's waits for a server to go away).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20 * 60);
    /// Limit of `CreateInstance` when neither `create_timeout` nor the
    /// request gives one: GARM's default pool bootstrap timeout.
    pub const DEFAULT_BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(20 * 60);
    /// Default concurrency: [`CallLimits::DEFAULT_CONCURRENCY`] (why: there).
    pub const DEFAULT_CONCURRENCY: usize = CallLimits::DEFAULT_CONCURRENCY;
    /// Default stdout bound (a `ListInstances` of thousands of instances fits).
    pub const DEFAULT_STDOUT_LIMIT: usize = 4 * 1024 * 1024;
    /// Default stderr tail kept.
    pub const DEFAULT_STDERR_LIMIT: usize = 16 * 1024;

    /// Settings with defaults for everything but the two paths.
    pub fn new(executable: impl Into<PathBuf>, config_file: impl Into<PathBuf>) -> Self {
        Self {
            executable: executable.into(),
            config_file: config_file.into(),
            interface_version: InterfaceVersion::V010,
            environment: EnvAllowList::default(),
            forward_proxy_variables: true,
            timeout: Self::DEFAULT_TIMEOUT,
            create_timeout: None,
            concurrency: NonZeroUsize::new(Self::DEFAULT_CONCURRENCY).unwrap_or(NonZeroUsize::MIN),
            create_rate: None,
            stdout_limit: Self::DEFAULT_STDOUT_LIMIT,
            stderr_limit: Self::DEFAULT_STDERR_LIMIT,
        }
    }
}

impl ExternalConfig {
    /// The limit of one `CreateInstance`: `create_timeout` when configured,
    /// else the scale set's bootstrap timeout carried by the request, else
    /// [`ExternalConfig::DEFAULT_BOOTSTRAP_TIMEOUT`].
    pub fn create_timeout_for(&self, bootstrap_timeout: Option<Duration>) -> Duration {
        self.create_timeout
            .or(bootstrap_timeout)
            .unwrap_or(Self::DEFAULT_BOOTSTRAP_TIMEOUT)
    }

    /// The limits its calls run under.
    pub fn limits(&self) -> CallLimits {
        CallLimits {
            concurrency: self.concurrency,
            create_rate: self.create_rate,
        }
    }
}

/// One thing wrong with a provider configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The provider's name, or `#<index>` when it has none.
    pub provider: String,
    /// The offending field.
    pub field: &'static str,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "provider {}: `{}`: {}",
            self.provider, self.field, self.message
        )
    }
}

/// Every problem found in the `[[provider]]` tables.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid provider configuration: {}", list(.problems))]
pub struct ConfigError {
    /// The problems, in file order.
    pub problems: Vec<ConfigProblem>,
}

fn list(problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl ProviderConfig {
    /// Validates all `[[provider]]` tables, including that names are unique.
    pub fn from_raw_list(raws: Vec<RawProviderConfig>) -> Result<Vec<Self>, ConfigError> {
        let mut problems = Vec::new();
        let mut configs: Vec<Self> = Vec::new();
        for (index, raw) in raws.into_iter().enumerate() {
            match validate(index, raw) {
                Ok(config) => {
                    if configs.iter().any(|c| c.name == config.name) {
                        problems.push(ConfigProblem {
                            provider: config.name.clone(),
                            field: "name",
                            message: "another [[provider]] has the same name; names must be unique"
                                .to_owned(),
                        });
                    } else {
                        configs.push(config);
                    }
                }
                Err(mut found) => problems.append(&mut found),
            }
        }
        if problems.is_empty() {
            Ok(configs)
        } else {
            Err(ConfigError { problems })
        }
    }
}

impl TryFrom<RawProviderConfig> for ProviderConfig {
    type Error = ConfigError;
    fn try_from(raw: RawProviderConfig) -> Result<Self, Self::Error> {
        validate(0, raw).map_err(|problems| ConfigError { problems })
    }
}

fn validate(index: usize, raw: RawProviderConfig) -> Result<ProviderConfig, Vec<ConfigProblem>> {
    let label = raw
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("#{}", index + 1));
    let mut problems = Vec::new();
    let mut problem = |field: &'static str, message: String| {
        problems.push(ConfigProblem {
            provider: label.clone(),
            field,
            message,
        });
    };

    let name = match raw.name.as_deref() {
        None | Some("") => {
            problem(
                "name",
                "missing; give every provider a unique name".to_owned(),
            );
            None
        }
        Some(name)
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            problem(
                "name",
                format!("{name:?} may only contain letters, digits, '-' and '_'"),
            );
            None
        }
        Some(name) => Some(name.to_owned()),
    };

    let kind = match raw.kind.as_deref() {
        Some("external") => {
            let executable = absolute(&mut problem, "executable", raw.executable);
            let config_file = absolute(&mut problem, "config_file", raw.config_file);
            let interface_version = match raw.interface_version.as_deref() {
                None | Some("v0.1.0" | "0.1.0") => Some(InterfaceVersion::V010),
                Some("v0.1.1" | "0.1.1") => Some(InterfaceVersion::V011),
                Some(other) => {
                    problem(
                        "interface_version",
                        format!("{other:?} is not supported; use \"v0.1.0\" or \"v0.1.1\""),
                    );
                    None
                }
            };
            let environment = match EnvAllowList::parse(&raw.environment) {
                Ok(list) => Some(list),
                Err(found) => {
                    for message in found {
                        problem("environment", message);
                    }
                    None
                }
            };
            let timeout = match raw.timeout.as_deref() {
                None => Some(ExternalConfig::DEFAULT_TIMEOUT),
                Some(text) => positive_duration(&mut problem, "timeout", text),
            };
            let create_timeout = match raw.create_timeout.as_deref() {
                None => Some(None),
                Some(text) => positive_duration(&mut problem, "create_timeout", text).map(Some),
            };
            let concurrency = match raw.concurrency {
                None => NonZeroUsize::new(ExternalConfig::DEFAULT_CONCURRENCY),
                Some(n) => {
                    let valid = usize::try_from(n).ok().and_then(NonZeroUsize::new);
                    if valid.is_none() {
                        problem(
                            "concurrency",
                            format!(
                                "{n} is not a positive number; give how many calls may run at \
                                 once (default {})",
                                ExternalConfig::DEFAULT_CONCURRENCY
                            ),
                        );
                    }
                    valid
                }
            };
            let create_rate = match raw.create_rate.as_deref() {
                None => Some(None),
                Some(text) => match CreateRate::parse(text) {
                    Ok(rate) => Some(Some(rate)),
                    Err(error) => {
                        problem("create_rate", error.to_string());
                        None
                    }
                },
            };
            match (
                executable,
                config_file,
                interface_version,
                environment,
                timeout,
                create_timeout,
                concurrency,
                create_rate,
            ) {
                (
                    Some(executable),
                    Some(config_file),
                    Some(interface_version),
                    Some(environment),
                    Some(timeout),
                    Some(create_timeout),
                    Some(concurrency),
                    Some(create_rate),
                ) => Some(ProviderKind::External(ExternalConfig {
                    executable,
                    config_file,
                    interface_version,
                    environment,
                    forward_proxy_variables: raw.forward_proxy_variables.unwrap_or(true),
                    timeout,
                    create_timeout,
                    concurrency,
                    create_rate,
                    stdout_limit: ExternalConfig::DEFAULT_STDOUT_LIMIT,
                    stderr_limit: ExternalConfig::DEFAULT_STDERR_LIMIT,
                })),
                _ => None,
            }
        }
        Some("fake") => {
            let external_only = [
                ("executable", raw.executable.is_some()),
                ("config_file", raw.config_file.is_some()),
                ("interface_version", raw.interface_version.is_some()),
                ("environment", !raw.environment.is_empty()),
                (
                    "forward_proxy_variables",
                    raw.forward_proxy_variables.is_some(),
                ),
                ("timeout", raw.timeout.is_some()),
                ("create_timeout", raw.create_timeout.is_some()),
                ("concurrency", raw.concurrency.is_some()),
                ("create_rate", raw.create_rate.is_some()),
            ];
            for (field, present) in external_only {
                if present {
                    problem(
                        field,
                        "only applies to kind = \"external\"; remove it".to_owned(),
                    );
                }
            }
            Some(ProviderKind::Fake)
        }
        Some(other) => {
            problem(
                "kind",
                format!("{other:?} is not a provider kind; use \"external\" or \"fake\""),
            );
            None
        }
        None => {
            problem("kind", "missing; use \"external\" or \"fake\"".to_owned());
            None
        }
    };

    match (name, kind) {
        (Some(name), Some(kind)) if problems.is_empty() => Ok(ProviderConfig { name, kind }),
        _ => Err(problems),
    }
}

fn positive_duration(
    problem: &mut impl FnMut(&'static str, String),
    field: &'static str,
    text: &str,
) -> Option<Duration> {
    match scaleset_duration::parse(text) {
        Ok(d) if d.is_zero() => {
            problem(field, "must be longer than zero".to_owned());
            None
        }
        Ok(d) => Some(d),
        Err(error) => {
            problem(field, error.to_string());
            None
        }
    }
}

fn absolute(
    problem: &mut impl FnMut(&'static str, String),
    field: &'static str,
    path: Option<PathBuf>,
) -> Option<PathBuf> {
    match path {
        None => {
            problem(field, "missing; give an absolute path".to_owned());
            None
        }
        Some(path) if !path.is_absolute() => {
            problem(
                field,
                format!("{} must be an absolute path", path.display()),
            );
            None
        }
        Some(path) => Some(path),
    }
}

#[cfg(test)]
mod tests;
