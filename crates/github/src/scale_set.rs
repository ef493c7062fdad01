//! Runner groups and scale sets: wire types ([`RunnerGroup`], [`RunnerScaleSet`], [`Label`],
//! [`RunnerSetting`]), request types, and endpoints 1-6 and 2b of protocol §5.

use http::Method;
use serde::{Deserialize, Serialize};

use crate::call::Call;
use crate::client::Client;
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::id::{GithubScaleSetId, RunnerGroupId};
use crate::lenient::{lenient_i64, lenient_opt_i64, lenient_timestamp, null_default};
use crate::statistics::Statistics;
use crate::timestamp::Timestamp;
use crate::wire::{List, decode};

const SCALE_SETS: &str = "_apis/runtime/runnerscalesets";

/// A runner group (protocol §6.3).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunnerGroup {
    /// Group id (the default group is 1).
    #[serde(default)]
    pub id: RunnerGroupId,
    /// Group name.
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    /// Number of runners.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub size: i64,
    /// True for the default group.
    #[serde(default, deserialize_with = "null_default")]
    pub is_default_group: bool,
}

/// A scale-set label; clients send `type: "System"`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Label {
    /// Label type (`System` when sent by this client).
    #[serde(rename = "type", default, deserialize_with = "null_default")]
    pub kind: String,
    /// Label name.
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    /// Label id (responses only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
}

impl Label {
    /// A `System` label.
    pub fn system(name: impl Into<String>) -> Self {
        Self {
            kind: "System".to_owned(),
            name: name.into(),
            id: None,
        }
    }
}

/// The runner settings block. Sent as `RunnerSetting`; `runnerSetting` is also accepted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerSetting {
    /// Runners do not self-update (`disableUpdate`; omitted when false).
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_false"
    )]
    pub disable_update: bool,
    /// Runners are ephemeral (older clients sent it; omitted when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// `isElastic` (older clients sent it; omitted when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_elastic: Option<bool>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// A runner scale set as the service returns it (protocol §6.1). Every field is optional on the
/// wire and defaults to zero/empty here.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(from = "RunnerScaleSetWire")]
#[non_exhaustive]
pub struct RunnerScaleSet {
    /// Server-assigned id.
    pub id: GithubScaleSetId,
    /// Name (also the default `runs-on` label).
    pub name: String,
    /// Runner group id, or `None` when the response omitted `runnerGroupId`.
    ///
    /// The reference (§6.1) found no evidence that group-scoped lists drop it, but clients must
    /// tolerate any field being absent: a caller that scoped the query by group takes the group
    /// from its query, so "omitted" must stay distinguishable from a real id.
    pub runner_group_id: Option<RunnerGroupId>,
    /// Runner group name.
    pub runner_group_name: String,
    /// Labels.
    pub labels: Vec<Label>,
    /// Runner settings (from `runnerSetting` or `RunnerSetting`).
    pub runner_setting: RunnerSetting,
    /// Creation time, when set.
    pub created_on: Option<Timestamp>,
    /// `runnerJitConfigUrl`.
    pub runner_jit_config_url: String,
    /// Current statistics, when included.
    pub statistics: Option<Statistics>,
    /// `getAcquirableJobsUrl` (unused by official clients).
    pub get_acquirable_jobs_url: String,
    /// `acquireJobsUrl` (unused by official clients).
    pub acquire_jobs_url: String,
    /// `createSessionUrl` (unused by official clients).
    pub create_session_url: String,
    /// `queueName`.
    pub queue_name: String,
    /// `enabled`, when sent.
    pub enabled: Option<bool>,
    /// `status` (`online`/`offline`), when sent.
    pub status: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunnerScaleSetWire {
    #[serde(default)]
    id: GithubScaleSetId,
    #[serde(default, deserialize_with = "null_default")]
    name: String,
    #[serde(default, deserialize_with = "lenient_opt_i64")]
    runner_group_id: Option<i64>,
    #[serde(default, deserialize_with = "null_default")]
    runner_group_name: String,
    #[serde(default, deserialize_with = "null_default")]
    labels: Vec<Label>,
    #[serde(default)]
    runner_setting: Option<RunnerSetting>,
    #[serde(default, rename = "RunnerSetting")]
    runner_setting_upper: Option<RunnerSetting>,
    #[serde(default, deserialize_with = "lenient_timestamp")]
    created_on: Option<Timestamp>,
    #[serde(default, deserialize_with = "null_default")]
    runner_jit_config_url: String,
    #[serde(default)]
    statistics: Option<Statistics>,
    #[serde(default, deserialize_with = "null_default")]
    get_acquirable_jobs_url: String,
    #[serde(default, deserialize_with = "null_default")]
    acquire_jobs_url: String,
    #[serde(default, deserialize_with = "null_default")]
    create_session_url: String,
    #[serde(default, deserialize_with = "null_default")]
    queue_name: String,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default, deserialize_with = "lenient_string")]
    status: String,
}

/// A string field that some responses send as a number.
fn lenient_string<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(
        match Option::<serde_json::Value>::deserialize(deserializer)? {
            Some(serde_json::Value::String(s)) => s,
            Some(serde_json::Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        },
    )
}

impl From<RunnerScaleSetWire> for RunnerScaleSet {
    fn from(wire: RunnerScaleSetWire) -> Self {
        Self {
            id: wire.id,
            name: wire.name,
            runner_group_id: wire.runner_group_id.map(RunnerGroupId),
            runner_group_name: wire.runner_group_name,
            labels: wire.labels,
            runner_setting: wire
                .runner_setting
                .or(wire.runner_setting_upper)
                .unwrap_or_default(),
            created_on: wire.created_on,
            runner_jit_config_url: wire.runner_jit_config_url,
            statistics: wire.statistics,
            get_acquirable_jobs_url: wire.get_acquirable_jobs_url,
            acquire_jobs_url: wire.acquire_jobs_url,
            create_session_url: wire.create_session_url,
            queue_name: wire.queue_name,
            enabled: wire.enabled,
            status: wire.status,
        }
    }
}

/// The body of a create-scale-set request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewRunnerScaleSet {
    /// Name, unique within the runner group.
    pub name: String,
    /// Runner group id (1 = default).
    pub runner_group_id: RunnerGroupId,
    /// Labels; when empty, `[{name: <name>, type: System}]` is sent. Empty types become `System`.
    pub labels: Vec<Label>,
    /// Runner settings, sent under the key `RunnerSetting`.
    #[serde(rename = "RunnerSetting")]
    pub runner_setting: RunnerSetting,
}

impl NewRunnerScaleSet {
    /// A scale set in `runner_group_id` with the name as its only label and updates disabled.
    pub fn new(name: impl Into<String>, runner_group_id: RunnerGroupId) -> Self {
        Self {
            name: name.into(),
            runner_group_id,
            labels: Vec::new(),
            runner_setting: RunnerSetting {
                disable_update: true,
                ..RunnerSetting::default()
            },
        }
    }

    /// Replaces the labels.
    pub fn with_labels(mut self, labels: Vec<Label>) -> Self {
        self.labels = labels;
        self
    }

    /// Replaces the runner settings.
    pub fn with_runner_setting(mut self, setting: RunnerSetting) -> Self {
        self.runner_setting = setting;
        self
    }
}

/// A partial update: only the fields that are `Some` are sent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerScaleSetPatch {
    /// New name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// New runner group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_group_id: Option<RunnerGroupId>,
    /// New labels (empty types become `System`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<Label>>,
    /// New runner settings, sent as `RunnerSetting`.
    #[serde(rename = "RunnerSetting", skip_serializing_if = "Option::is_none")]
    pub runner_setting: Option<RunnerSetting>,
}

fn default_label_types(labels: &mut [Label]) {
    for label in labels {
        if label.kind.trim().is_empty() {
            label.kind = "System".to_owned();
        }
    }
}

/// At most one item by count, as the official client decides for runner groups: more than one
/// is [`Error::Ambiguous`].
fn single<T>(endpoint: Endpoint, name: &str, list: List<T>) -> Result<Option<T>> {
    match list.count {
        count if count <= 0 => Ok(None),
        1 => Ok(list.value.into_iter().next()),
        count => Err(Error::Ambiguous {
            endpoint,
            name: name.to_owned(),
            count: usize::try_from(count).unwrap_or(usize::MAX),
        }),
    }
}

/// The one scale set named exactly `name` (DESIGN §4 rule 2): items the server's filter let
/// through with another name (case, prefix, an ignored filter) are dropped; two or more exact
/// matches are [`Error::Ambiguous`].
fn exactly_named(
    endpoint: Endpoint,
    name: &str,
    list: List<RunnerScaleSet>,
) -> Result<Option<RunnerScaleSet>> {
    let mut matches: Vec<RunnerScaleSet> =
        list.value.into_iter().filter(|s| s.name == name).collect();
    match matches.len() {
        0 | 1 => Ok(matches.pop()),
        count => Err(Error::Ambiguous {
            endpoint,
            name: name.to_owned(),
            count,
        }),
    }
}

impl Client {
    /// (1) `GET /_apis/runtime/runnergroups/?groupName=<name>`: `None` when no group has this
    /// name, [`Error::Ambiguous`] when several do. Callers use id 1 for `default` without calling this.
    pub async fn get_runner_group_by_name(&self, name: &str) -> Result<Option<RunnerGroup>> {
        let call = Call::service(
            Endpoint::GetRunnerGroupByName,
            Method::GET,
            "_apis/runtime/runnergroups/",
            &[200],
        )
        .query("groupName", name);
        let response = self.execute(&call).await?;
        let list: List<RunnerGroup> = decode(call.endpoint, response.status, &response.body)?;
        single(call.endpoint, name, list)
    }

    /// (2) `GET /_apis/runtime/runnerscalesets?runnerGroupId=<id>&name=<name>`, keeping only
    /// the items named exactly `name` (case-sensitive; the service's filter may be looser):
    /// none → `None`, one → the set, more → [`Error::Ambiguous`] (fatal: an operator must
    /// remove or rename one).
    pub async fn get_scale_set_by_name(
        &self,
        runner_group_id: RunnerGroupId,
        name: &str,
    ) -> Result<Option<RunnerScaleSet>> {
        let (_, list) = self.query_scale_sets_by_name(runner_group_id, name).await?;
        exactly_named(Endpoint::GetScaleSetByName, name, list)
    }

    /// (2) The raw list envelope of the by-name query, for callers that apply their own
    /// matching rules (exact name, group check, ambiguity). Returns the HTTP status too.
    pub async fn query_scale_sets_by_name(
        &self,
        runner_group_id: RunnerGroupId,
        name: &str,
    ) -> Result<(u16, List<RunnerScaleSet>)> {
        let call = Call::service(Endpoint::GetScaleSetByName, Method::GET, SCALE_SETS, &[200])
            .query("runnerGroupId", runner_group_id.to_string())
            .query("name", name);
        let response = self.execute(&call).await?;
        let list = decode(call.endpoint, response.status, &response.body)?;
        Ok((response.status, list))
    }

    /// (2b) `GET /_apis/runtime/runnerscalesets[?runnerGroupId=<id>]`.
    pub async fn list_scale_sets(
        &self,
        runner_group_id: Option<RunnerGroupId>,
    ) -> Result<Vec<RunnerScaleSet>> {
        let mut call = Call::service(Endpoint::ListScaleSets, Method::GET, SCALE_SETS, &[200]);
        if let Some(group) = runner_group_id {
            call = call.query("runnerGroupId", group.to_string());
        }
        let response = self.execute(&call).await?;
        let list: List<RunnerScaleSet> = decode(call.endpoint, response.status, &response.body)?;
        Ok(list.value)
    }

    /// (3) `GET /_apis/runtime/runnerscalesets/{id}`.
    pub async fn get_scale_set(&self, scale_set_id: GithubScaleSetId) -> Result<RunnerScaleSet> {
        let call = Call::service(
            Endpoint::GetScaleSet,
            Method::GET,
            format!("{SCALE_SETS}/{scale_set_id}"),
            &[200],
        );
        let response = self.execute(&call).await?;
        decode(call.endpoint, response.status, &response.body)
    }

    /// (4) `POST /_apis/runtime/runnerscalesets`; expects 200. A duplicate name fails with an
    /// error for which [`Error::is_scale_set_exists`] is true.
    pub async fn create_scale_set(&self, scale_set: &NewRunnerScaleSet) -> Result<RunnerScaleSet> {
        let endpoint = Endpoint::CreateScaleSet;
        if scale_set.name.trim().is_empty() {
            return Err(Error::InvalidRequest {
                endpoint,
                reason: "a scale set needs a name".to_owned(),
            });
        }
        let mut body = scale_set.clone();
        if body.labels.is_empty() {
            body.labels.push(Label::system(body.name.clone()));
        }
        default_label_types(&mut body.labels);
        let call = Call::service(endpoint, Method::POST, SCALE_SETS, &[200]).json(&body)?;
        let response = self.execute(&call).await?;
        decode(call.endpoint, response.status, &response.body)
    }

    /// (5) `PATCH /_apis/runtime/runnerscalesets/{id}` with only the fields set in `patch`.
    pub async fn update_scale_set(
        &self,
        scale_set_id: GithubScaleSetId,
        patch: &RunnerScaleSetPatch,
    ) -> Result<RunnerScaleSet> {
        let mut body = patch.clone();
        if let Some(labels) = &mut body.labels {
            default_label_types(labels);
        }
        let call = Call::service(
            Endpoint::UpdateScaleSet,
            Method::PATCH,
            format!("{SCALE_SETS}/{scale_set_id}"),
            &[200],
        )
        .json(&body)?;
        let response = self.execute(&call).await?;
        decode(call.endpoint, response.status, &response.body)
    }

    /// (6) `DELETE /_apis/runtime/runnerscalesets/{id}`; expects 204.
    pub async fn delete_scale_set(&self, scale_set_id: GithubScaleSetId) -> Result<()> {
        let call = Call::service(
            Endpoint::DeleteScaleSet,
            Method::DELETE,
            format!("{SCALE_SETS}/{scale_set_id}"),
            &[204],
        );
        self.execute(&call).await?;
        Ok(())
    }
}
