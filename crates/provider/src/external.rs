//! The external provider: runs a GARM provider executable (interface v0.1.0
//! or v0.1.1) unchanged. Owns the environment each command gets, the mapping
//! of exit codes and stdout to results, the concurrency limit and the
//! per-call trace.

mod process;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine as _;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::bootstrap::CreateRequest;
use crate::command::Command;
use crate::config::{ExternalConfig, InterfaceVersion};
use crate::environment::{EnvSource, passthrough};
use crate::error::{Error, OutputProblem};
use crate::instance::{
    InstanceId, ProviderInstance, check_instance_name, fault_of, parse_instance,
    parse_instance_list,
};
use crate::limit::Limiter;
use crate::pool::{Pool, PoolKey};
use crate::provider::Provider;
use secrecy::ExposeSecret;

/// GARM's "not found" exit code. It means "not found" only for the commands
/// about one existing instance that GARM reads it from (see [`exit_error`]).
const EXIT_NOT_FOUND: i32 = 30;
/// GARM's "duplicate" exit code; it means "duplicate" only for a create.
const EXIT_DUPLICATE: i32 = 31;

/// Passed-through values at least this many characters long are redacted from
/// error text. Credentials (`OS_PASSWORD`, `AWS_SECRET_ACCESS_KEY`, API
/// tokens) are practically always this long, while the short values operators
/// also pass through (`"1"`, `"true"`, `"443"`, `"v3"`) occur everywhere in
/// ordinary text: replacing those would shred the message and hide the real
/// error. Over-redacting a long non-secret (a proxy URL) only costs
/// readability, so the bar is low rather than high.
const MIN_REDACTED_LEN: usize = 8;

/// A GARM external-provider executable behind the [`Provider`] trait.
///
/// Each call runs the executable once with a cleared environment holding only
/// the `GARM_*` variables of that command, the operator-allowed variables and,
/// unless turned off, the proxy variables (captured when the provider is
/// built). `CreateInstance` is bounded by `create_timeout` or the request's
/// bootstrap timeout, every other call by `timeout`. At most `concurrency` calls run at
/// once; the rest wait for a slot, and creates under a `create_rate` for their turn
/// ([`crate::CallLimits`]; the timeout starts when the executable starts). Each call is traced as `provider.exec{provider, command,
/// instance}` with its duration and exit code; the bootstrap JSON (which holds
/// the instance token) is never logged. The stderr tail and provider fault of
/// a failed call have the call's tokens and every passed-through value of at
/// least eight characters replaced by `<redacted>`.
pub struct ExternalProvider {
    name: String,
    config: ExternalConfig,
    controller_id: Uuid,
    passthrough: Vec<(String, String)>,
    limiter: Arc<Limiter>,
}

impl std::fmt::Debug for ExternalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Passed-through values may be credentials (OS_PASSWORD, ...): names only.
        let names: Vec<&str> = self.passthrough.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ExternalProvider")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("controller_id", &self.controller_id)
            .field("passthrough", &names)
            .finish_non_exhaustive()
    }
}

/// `env` with `GARM_CONTROLLER_ID` naming the controller whose pool it is, when that is not
/// us ([`Pool::controller_id`]: a pool taken over from GARM).
fn owned_by(pool: &Pool, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
    if let Some(controller) = pool.controller_id {
        for (name, value) in &mut env {
            if name == "GARM_CONTROLLER_ID" {
                *value = controller.to_string();
            }
        }
    }
    env
}

impl ExternalProvider {
    /// Builds the provider. `env` is where operator-allowed variables are read
    /// from (the process environment in production, a map in tests).
    pub fn new(
        name: impl Into<String>,
        config: ExternalConfig,
        controller_id: Uuid,
        env: &dyn EnvSource,
    ) -> Self {
        let passthrough = passthrough(&config.environment, config.forward_proxy_variables, env);
        let limiter = Arc::new(Limiter::new(config.limits()));
        Self {
            name: name.into(),
            config,
            controller_id,
            passthrough,
            limiter,
        }
    }

    /// The provider's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The variables of one call: the `GARM_*` ones for `command`, then the
    /// passed-through ones. `extra_specs` are sent as `GARM_POOL_EXTRASPECS`
    /// (v0.1.1 only; `None` for commands GARM sends none with, `Some(None)`
    /// sends JSON `null` as GARM does for a pool without extra specs).
    fn environment(
        &self,
        command: Command,
        extra_specs: Option<Option<&serde_json::Value>>,
        pool_key: Option<&PoolKey>,
        instance: Option<&InstanceId>,
    ) -> Vec<(String, String)> {
        let mut env = vec![
            ("GARM_COMMAND".to_owned(), command.as_str().to_owned()),
            (
                "GARM_CONTROLLER_ID".to_owned(),
                self.controller_id.to_string(),
            ),
            (
                "GARM_PROVIDER_CONFIG_FILE".to_owned(),
                self.config.config_file.to_string_lossy().into_owned(),
            ),
            (
                "GARM_INTERFACE_VERSION".to_owned(),
                self.config.interface_version.as_str().to_owned(),
            ),
        ];
        if let Some(key) = pool_key {
            env.push(("GARM_POOL_ID".to_owned(), key.to_string()));
        }
        if let Some(instance) = instance {
            env.push(("GARM_INSTANCE_ID".to_owned(), instance.to_string()));
        }
        if self.config.interface_version == InterfaceVersion::V011
            && let Some(extra_specs) = extra_specs
        {
            let json = serde_json::to_vec(&extra_specs).unwrap_or_else(|_| b"null".to_vec());
            env.push((
                "GARM_POOL_EXTRASPECS".to_owned(),
                base64::engine::general_purpose::STANDARD.encode(json),
            ));
        }
        env.extend(self.passthrough.iter().cloned());
        env
    }

    /// Runs one command, killing it after `timeout`; returns stdout on exit
    /// code 0.
    async fn call(
        &self,
        command: Command,
        env: Vec<(String, String)>,
        stdin: Option<Vec<u8>>,
        instance: &str,
        secrets: &[&str],
        timeout: Duration,
    ) -> Result<Vec<u8>, Error> {
        let span = tracing::debug_span!(
            "provider.exec",
            provider = %self.name,
            command = command.as_str(),
            instance = instance,
        );
        // A provider may echo its environment (credentials the operator let
        // through) as well as its input: redact both, longest first so that a
        // secret containing another is not left half-visible.
        let mut secrets: Vec<&str> = secrets
            .iter()
            .copied()
            .chain(
                self.passthrough
                    .iter()
                    .map(|(_, value)| value.as_str())
                    .filter(|value| value.chars().count() >= MIN_REDACTED_LEN),
            )
            .collect();
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        async {
            // The timeout starts once admitted: waiting for a slot or a
            // create's turn under the rate is not the executable's time.
            let _admitted = self.limiter.admit(command).await;
            let started = Instant::now();
            let result = process::run(process::Invocation {
                command,
                executable: &self.config.executable,
                env,
                stdin,
                timeout,
                stdout_limit: self.config.stdout_limit,
                stderr_limit: self.config.stderr_limit,
            })
            .await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            match &result {
                Ok(outcome) => tracing::debug!(
                    duration_ms,
                    exit_code = outcome.status.code(),
                    stdout_bytes = outcome.stdout.len(),
                    "provider call finished"
                ),
                Err(err) => {
                    tracing::debug!(duration_ms, error = %err, "provider call did not finish")
                }
            }
            let outcome = result?;
            match outcome.status.code() {
                Some(0) if outcome.stdout_overflowed => Err(Error::BadOutput {
                    command,
                    problem: OutputProblem::TooLarge {
                        limit: self.config.stdout_limit,
                    },
                }),
                Some(0) => Ok(outcome.stdout),
                exit_code => Err(exit_error(
                    command,
                    exit_code,
                    redact(
                        String::from_utf8_lossy(&outcome.stderr_tail).into_owned(),
                        &secrets,
                    ),
                    fault_of(&outcome.stdout).map(|f| redact(f, &secrets)),
                )),
            }
        }
        .instrument(span)
        .await
    }

    async fn instance_call(
        &self,
        command: Command,
        pool: &Pool,
        instance: &InstanceId,
    ) -> Result<Vec<u8>, Error> {
        // v0.1.0 sends no pool ID with instance commands (as GARM does);
        // v0.1.1 sends it and the extra specs.
        let pool_key = match self.config.interface_version {
            InterfaceVersion::V010 => None,
            InterfaceVersion::V011 => Some(&pool.key),
        };
        let env = owned_by(
            pool,
            self.environment(
                command,
                Some(pool.extra_specs.as_ref()),
                pool_key,
                Some(instance),
            ),
        );
        self.call(
            command,
            env,
            None,
            instance.as_str(),
            &[],
            self.config.timeout,
        )
        .await
    }
}

/// The error of a non-zero exit. Exit codes 30 and 31 get GARM's meaning only
/// where GARM reads one: 30 from `GetInstance` and `DeleteInstance` (whose
/// caller treats it as done), 31 from `CreateInstance`. Elsewhere they are
/// failures like any other: LXD exits 30 from a create whose image or
/// profile is missing, and "instance does not exist" would hide that.
fn exit_error(
    command: Command,
    exit_code: Option<i32>,
    stderr_tail: String,
    provider_fault: Option<String>,
) -> Error {
    match (exit_code, command) {
        (Some(EXIT_NOT_FOUND), Command::GetInstance | Command::DeleteInstance) => Error::NotFound {
            command,
            stderr_tail,
        },
        (Some(EXIT_DUPLICATE), Command::CreateInstance) => Error::Duplicate {
            command,
            stderr_tail,
        },
        _ => Error::Failed {
            command,
            exit_code,
            stderr_tail,
            provider_fault,
        },
    }
}

/// Replaces every occurrence of a secret with `<redacted>`.
fn redact(mut text: String, secrets: &[&str]) -> String {
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if text.contains(secret) {
            text = text.replace(secret, "<redacted>");
        }
    }
    text
}

fn bad_output(command: Command) -> impl FnOnce(OutputProblem) -> Error {
    move |problem| Error::BadOutput { command, problem }
}

#[async_trait]
impl Provider for ExternalProvider {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        let command = Command::CreateInstance;
        let bootstrap = &request.bootstrap;
        // Providers make the name a machine, file or container name: refused before the run.
        check_instance_name(command, &bootstrap.name)?;
        let stdin = serde_json::to_vec(bootstrap).map_err(|err| Error::Io {
            command,
            source: std::io::Error::other(err),
        })?;
        // As GARM does, v0.1.1 sends the bootstrap's extra specs in
        // `GARM_POOL_EXTRASPECS` too (they are also in the bootstrap JSON).
        let env = self.environment(
            command,
            Some(bootstrap.extra_specs.as_ref()),
            Some(&bootstrap.pool_id),
            None,
        );
        // A provider that echoes its input on failure must not leak the
        // credentials in it through our error messages.
        let secrets: Vec<&str> = std::iter::once(bootstrap.instance_token.expose_secret())
            .chain(
                bootstrap
                    .tools
                    .iter()
                    .filter_map(|tool| tool.temp_download_token.as_ref())
                    .map(ExposeSecret::expose_secret),
            )
            .collect();
        let timeout = self.config.create_timeout_for(request.bootstrap_timeout);
        let stdout = self
            .call(
                command,
                env,
                Some(stdin),
                &bootstrap.name,
                &secrets,
                timeout,
            )
            .await?;
        parse_instance(&stdout).map_err(bad_output(command))
    }

    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        match self
            .instance_call(Command::DeleteInstance, pool, instance)
            .await
        {
            Ok(_) | Err(Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }

    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        let stdout = self
            .instance_call(Command::GetInstance, pool, instance)
            .await?;
        parse_instance(&stdout).map_err(bad_output(Command::GetInstance))
    }

    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        let command = Command::ListInstances;
        let env = owned_by(
            pool,
            self.environment(
                command,
                Some(pool.extra_specs.as_ref()),
                Some(&pool.key),
                None,
            ),
        );
        let stdout = self
            .call(command, env, None, "", &[], self.config.timeout)
            .await?;
        parse_instance_list(&stdout).map_err(bad_output(command))
    }

    async fn remove_all(&self) -> Result<(), Error> {
        let command = Command::RemoveAllInstances;
        let env = self.environment(command, None, None, None);
        self.call(command, env, None, "", &[], self.config.timeout)
            .await
            .map(drop)
    }

    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.instance_call(Command::StartInstance, pool, instance)
            .await
            .map(drop)
    }

    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.instance_call(Command::StopInstance, pool, instance)
            .await
            .map(drop)
    }

    async fn version(&self) -> Result<String, Error> {
        let command = Command::GetVersion;
        let env = self.environment(command, None, None, None);
        let stdout = self
            .call(command, env, None, "", &[], self.config.timeout)
            .await?;
        let version = String::from_utf8_lossy(&stdout).trim().to_owned();
        if version.is_empty() {
            return Err(Error::BadOutput {
                command,
                problem: OutputProblem::EmptyVersion,
            });
        }
        Ok(version)
    }
}
