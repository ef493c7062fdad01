//! Runners (agents): [`RunnerReference`], JIT configuration ([`JitConfigRequest`],
//! [`JitConfig`]), what removing one came to ([`Removal`]) and endpoints 14-17 and 16b of
//! protocol §5.

use http::Method;
use serde::{Deserialize, Serialize};

use crate::call::Call;
use crate::client::Client;
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::id::{GithubScaleSetId, RunnerGroupId, RunnerId};
use crate::lenient::{lenient_timestamp, null_default};
use crate::scale_set::Label;
use crate::timestamp::Timestamp;
use crate::wire::{List, decode};
use secrecy::{ExposeSecret, SecretString};

const AGENTS: &str = "_apis/distributedtask/pools/0/agents";

/// A registered runner (protocol §6.8).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunnerReference {
    /// Runner (agent) id.
    #[serde(default)]
    pub id: RunnerId,
    /// Runner name.
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    /// The scale set it belongs to.
    #[serde(default)]
    pub runner_scale_set_id: GithubScaleSetId,
    /// Operating system.
    #[serde(default, deserialize_with = "null_default")]
    pub os: String,
    /// Registration time.
    #[serde(default, deserialize_with = "lenient_timestamp")]
    pub created_on: Option<Timestamp>,
    /// Runner group id.
    #[serde(default)]
    pub runner_group_id: RunnerGroupId,
    /// Runner group name.
    #[serde(default, deserialize_with = "null_default")]
    pub runner_group_name: String,
    /// Runner version.
    #[serde(default, deserialize_with = "null_default")]
    pub version: String,
    /// Enabled flag, when sent.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Ephemeral flag, when sent.
    #[serde(default)]
    pub ephemeral: Option<bool>,
    /// `online` / `offline`.
    #[serde(default, deserialize_with = "null_default")]
    pub status: String,
    /// Updates disabled, when sent.
    #[serde(default)]
    pub disable_update: Option<bool>,
    /// Provisioning state.
    #[serde(default, deserialize_with = "null_default")]
    pub provisioning_state: String,
    /// Busy with a job, when sent.
    #[serde(default)]
    pub busy: Option<bool>,
    /// Labels.
    #[serde(default, deserialize_with = "null_default")]
    pub labels: Vec<Label>,
}

/// The body of a generate-JIT-config request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JitConfigRequest {
    /// Runner name (must be unique).
    pub name: String,
    /// Work folder; always sent (empty string when unset).
    pub work_folder: String,
}

impl JitConfigRequest {
    /// A request for a runner called `name` with an empty work folder.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            work_folder: String::new(),
        }
    }

    /// Sets the work folder.
    pub fn with_work_folder(mut self, work_folder: impl Into<String>) -> Self {
        self.work_folder = work_folder.into();
        self
    }
}

/// A generated JIT configuration. `encoded_jit_config` is a secret: hand it to the runner
/// (`run.sh --jitconfig` or `ACTIONS_RUNNER_INPUT_JITCONFIG`) and nowhere else.
// No `PartialEq`: secrets are not compared (secrecy offers no equality).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct JitConfig {
    /// The registered runner.
    #[serde(default, deserialize_with = "null_default")]
    pub runner: RunnerReference,
    /// The base64 JIT blob.
    #[serde(
        default,
        rename = "encodedJITConfig",
        alias = "encodedJitConfig",
        deserialize_with = "null_default"
    )]
    pub encoded_jit_config: SecretString,
}

/// What asking GitHub to remove a runner came to: every answer a caller acts on, so no caller
/// reads statuses or exception names to tell "gone" from "busy".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Removal {
    /// Removed now (204).
    Removed,
    /// Not registered (any more): `AgentNotFoundException` or a 404. The goal holds.
    Gone,
    /// It runs a job (`JobStillRunningException`): not removed; ask again after the job.
    StillRunning,
}

/// Whether a runner call's error says the runner is not registered: GitHub names
/// `AgentNotFoundException`, or answers a bare 404 on the agent's own URL (protocol §5.1 (17)).
fn is_gone(error: &Error) -> bool {
    error.is_agent_not_found() || error.status() == Some(404)
}

impl Client {
    /// (14) `POST /_apis/runtime/runnerscalesets/{id}/generatejitconfig`; expects 200.
    /// A duplicate runner name gives an error for which [`Error::is_agent_exists`] is true.
    pub async fn generate_jit_config(
        &self,
        scale_set_id: GithubScaleSetId,
        request: &JitConfigRequest,
    ) -> Result<JitConfig> {
        let call = Call::service(
            Endpoint::GenerateJitConfig,
            Method::POST,
            format!("_apis/runtime/runnerscalesets/{scale_set_id}/generatejitconfig"),
            &[200],
        )
        .json(request)?;
        let response = self.execute(&call).await?;
        let config: JitConfig = decode(call.endpoint, response.status, &response.body)?;
        if config.encoded_jit_config.expose_secret().is_empty() {
            return Err(Error::UnexpectedResponse {
                endpoint: call.endpoint,
                status: response.status,
                reason: "the response has no encodedJITConfig".to_owned(),
            });
        }
        Ok(config)
    }

    /// (15) `GET /_apis/distributedtask/pools/0/agents/{id}`: `None` when the runner is not
    /// registered (`AgentNotFoundException` or a 404).
    pub async fn get_runner(&self, runner_id: RunnerId) -> Result<Option<RunnerReference>> {
        let call = Call::service(
            Endpoint::GetRunner,
            Method::GET,
            format!("{AGENTS}/{runner_id}"),
            &[200],
        );
        match self.execute(&call).await {
            Ok(response) => decode(call.endpoint, response.status, &response.body).map(Some),
            Err(e) if is_gone(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// (16) `GET /_apis/distributedtask/pools/0/agents?agentName=<name>`: `None` when count is
    /// 0, [`Error::Ambiguous`] when more than one.
    pub async fn get_runner_by_name(&self, name: &str) -> Result<Option<RunnerReference>> {
        let call = Call::service(Endpoint::GetRunnerByName, Method::GET, AGENTS, &[200])
            .query("agentName", name);
        let response = self.execute(&call).await?;
        let list: List<RunnerReference> = decode(call.endpoint, response.status, &response.body)?;
        match list.count {
            count if count <= 0 => Ok(None),
            1 => Ok(list.value.into_iter().next()),
            count => Err(Error::Ambiguous {
                endpoint: call.endpoint,
                name: name.to_owned(),
                count: usize::try_from(count).unwrap_or(usize::MAX),
            }),
        }
    }

    /// (16b) `GET /_apis/distributedtask/pools/0/agents`.
    pub async fn list_runners(&self) -> Result<Vec<RunnerReference>> {
        let call = Call::service(Endpoint::ListRunners, Method::GET, AGENTS, &[200]);
        let response = self.execute(&call).await?;
        let list: List<RunnerReference> = decode(call.endpoint, response.status, &response.body)?;
        Ok(list.value)
    }

    /// (17) `DELETE /_apis/distributedtask/pools/0/agents/{id}`; expects 204. A busy runner
    /// (400 `JobStillRunningException`) is [`Removal::StillRunning`], one not registered
    /// (`AgentNotFoundException` or a 404) [`Removal::Gone`]; anything else is an error.
    pub async fn remove_runner(&self, runner_id: RunnerId) -> Result<Removal> {
        let call = Call::service(
            Endpoint::RemoveRunner,
            Method::DELETE,
            format!("{AGENTS}/{runner_id}"),
            &[204],
        );
        match self.execute(&call).await {
            Ok(_) => Ok(Removal::Removed),
            Err(e) if e.is_job_still_running() => Ok(Removal::StillRunning),
            Err(e) if is_gone(&e) => Ok(Removal::Gone),
            Err(e) => Err(e),
        }
    }
}
