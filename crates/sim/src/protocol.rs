//! The simulator's own wire shapes, written from the protocol reference (never shared with the
//! client): JSON rendering of scale sets, sessions, agents, groups, messages and list envelopes;
//! case-insensitive decoding of request bodies; and the encoded JIT configuration.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::clock::SimTime;
use crate::quota::QuotaStatus;
use crate::runner_download::{Archive, release_path};
use crate::snapshot::Statistics;
use crate::state::{
    Agent, Delivery, Job, JobEvent, Label, RunnerGroup, ScaleSet, ScaleSetInput, Session,
};

/// `{count, value}`, with `count == len(value)`.
pub(crate) fn envelope(value: Vec<Value>) -> Value {
    json!({ "count": value.len(), "value": value })
}

/// A runner group.
pub(crate) fn runner_group(group: &RunnerGroup, size: usize) -> Value {
    json!({
        "id": group.id,
        "name": group.name,
        "size": size,
        "isDefaultGroup": group.is_default,
    })
}

/// A runner group as GitHub's REST API lists it (`GET …/actions/runner-groups`). `scope_url`
/// is the scope's REST URL (`{origin}/api/v3/orgs/acme`). The simulator models no visibility or
/// workflow restriction, so every group answers as GitHub answers an unrestricted one.
pub(crate) fn rest_runner_group(group: &RunnerGroup, scope_url: &str, enterprise: bool) -> Value {
    let id = group.id;
    let mut value = json!({
        "id": id,
        "name": group.name,
        "visibility": "all",
        "default": group.is_default,
        "runners_url": format!("{scope_url}/actions/runner-groups/{id}/runners"),
        "allows_public_repositories": false,
        "restricted_to_workflows": false,
        "selected_workflows": [],
        "workflow_restrictions_read_only": false,
    });
    if let Some(object) = value.as_object_mut() {
        if enterprise {
            object.insert(
                "selected_organizations_url".to_owned(),
                json!(format!(
                    "{scope_url}/actions/runner-groups/{id}/organizations"
                )),
            );
        } else {
            // An organization's own groups; groups an enterprise shares with it are `true`.
            object.insert("inherited".to_owned(), json!(false));
        }
    }
    value
}

/// Statistics as the service names them.
pub(crate) fn statistics(stats: &Statistics) -> Value {
    serde_json::to_value(stats).unwrap_or(Value::Null)
}

/// A scale set. `base_url` is the Actions service URL (ending in `/`).
pub(crate) fn scale_set(
    set: &ScaleSet,
    group_name: Option<&str>,
    stats: &Statistics,
    base_url: &str,
) -> Value {
    let set_url = format!("{base_url}_apis/runtime/runnerscalesets/{}", set.id);
    let mut runner_setting = json!({ "ephemeral": true, "isElastic": true });
    if set.disable_update {
        runner_setting["disableUpdate"] = json!(true);
    }
    let mut value = json!({
        "id": set.id,
        "name": set.name,
        "runnerGroupId": set.group_id,
        "labels": set.labels.iter().enumerate().map(|(i, l)| json!({
            "id": i + 1,
            "name": l.name,
            "type": l.kind,
        })).collect::<Vec<_>>(),
        "runnerSetting": runner_setting,
        "createdOn": set.created_on.to_dotnet(),
        "runnerJitConfigUrl": format!("{set_url}/generatejitconfig"),
        "getAcquirableJobsUrl": format!("{set_url}/acquirablejobs"),
        "acquireJobsUrl": format!("{set_url}/acquirejobs"),
        "createSessionUrl": format!("{set_url}/sessions"),
        "statistics": statistics(stats),
        "enabled": true,
        "status": if set.session.is_some() { "online" } else { "offline" },
    });
    if let Some(name) = group_name {
        value["runnerGroupName"] = json!(name);
    }
    value
}

/// A session; `scale_set` is the rendered scale set it belongs to.
pub(crate) fn session(
    session: &Session,
    scale_set: Value,
    queue_url: &str,
    queue_token: &str,
    stats: &Statistics,
) -> Value {
    json!({
        "sessionId": session.id,
        "ownerName": session.owner,
        "runnerScaleSet": scale_set,
        "messageQueueUrl": queue_url,
        "messageQueueAccessToken": queue_token,
        "statistics": statistics(stats),
    })
}

/// A message envelope: `body` is the JSON array of job messages, as a string.
pub(crate) fn message(delivery: &Delivery) -> Value {
    json!({
        "messageId": delivery.id,
        "messageType": "RunnerScaleSetJobMessages",
        "body": Value::Array(delivery.events.iter().map(job_event).collect()).to_string(),
        "statistics": statistics(&delivery.statistics),
    })
}

/// The `messageType` of a job message.
pub(crate) fn message_type(event: &JobEvent) -> &'static str {
    match event {
        JobEvent::Available(_) => "JobAvailable",
        JobEvent::Assigned(_) => "JobAssigned",
        JobEvent::Started { .. } => "JobStarted",
        JobEvent::Completed { .. } => "JobCompleted",
    }
}

/// One job message (an element of a queue message's `body` array). Unset times are .NET's
/// zero date, as the service writes them.
pub(crate) fn job_event(event: &JobEvent) -> Value {
    let (job, runner, result): (&Job, Option<(i64, &str)>, Option<&str>) = match event {
        JobEvent::Available(job) | JobEvent::Assigned(job) => (job, None, None),
        JobEvent::Started { job, runner } => (job, Some((runner.0, runner.1.as_str())), None),
        JobEvent::Completed {
            job,
            runner,
            result,
        } => (
            job,
            Some(
                runner
                    .as_ref()
                    .map_or((0, ""), |(id, name)| (*id, name.as_str())),
            ),
            Some(result.as_str()),
        ),
    };
    let unset = "0001-01-01T00:00:00Z".to_owned();
    let time = |t: Option<SimTime>| t.map_or_else(|| unset.clone(), SimTime::to_dotnet);
    let mut value = json!({
        "messageType": message_type(event),
        "runnerRequestId": job.wire_request_id,
        "jobId": job.job_id,
        "repositoryName": job.repository,
        "ownerName": job.owner,
        "jobWorkflowRef": job.workflow_ref,
        "jobDisplayName": job.display_name,
        "workflowRunId": job.run_id,
        "eventName": job.event_name,
        "requestLabels": job.labels,
        "queueTime": job.queue_time.to_dotnet(),
        "scaleSetAssignTime": time(job.assigned_at),
        "runnerAssignTime": time(job.runner_assigned_at),
        "finishTime": time(job.finished_at),
    });
    if let JobEvent::Available(job) = event {
        value["acquireJobUrl"] = json!(format!("acquirejobs/{}", job.request_id));
    }
    if let Some((id, name)) = runner {
        value["runnerId"] = json!(id);
        value["runnerName"] = json!(name);
    }
    if let Some(result) = result {
        value["result"] = json!(result);
    }
    value
}

/// An agent (`RunnerReference`).
pub(crate) fn agent(agent: &Agent, group: Option<&RunnerGroup>) -> Value {
    let busy = matches!(agent.phase, crate::state::AgentPhase::Busy { .. });
    let online = !matches!(agent.phase, crate::state::AgentPhase::Registered);
    json!({
        "id": agent.id,
        "name": agent.name,
        "runnerScaleSetId": agent.scale_set_id,
        "runnerGroupId": group.map(|g| g.id),
        "runnerGroupName": group.map(|g| g.name.clone()),
        "os": "Linux",
        "version": crate::runner_download::RUNNER_VERSION,
        "enabled": true,
        "ephemeral": true,
        "status": if online { "online" } else { "offline" },
        "busy": busy,
        "createdOn": agent.created_on.to_dotnet(),
        "disableUpdate": false,
        "provisioningState": "Provisioned",
    })
}

/// The JIT configuration handed out for an agent: base64 of a JSON object whose `.runner` entry
/// (base64 JSON) names the agent and scale set, as the real blob's shape.
pub(crate) fn encode_jit_config(agent: &Agent, server_url: &str, work_folder: &str) -> String {
    let runner = json!({
        "AgentId": agent.id,
        "AgentName": agent.name,
        "PoolId": 0,
        "RunnerScaleSetId": agent.scale_set_id,
        "ServerUrl": server_url,
        "WorkFolder": if work_folder.is_empty() { "_work" } else { work_folder },
        "Ephemeral": true,
    });
    let credentials = json!({ "Scheme": "OAuthAccessToken", "Data": { "clientId": uuid::Uuid::new_v4().to_string() } });
    let blob = json!({
        ".runner": STANDARD.encode(runner.to_string()),
        ".credentials": STANDARD.encode(credentials.to_string()),
        ".credentials_rsaparams": STANDARD.encode("{}"),
    });
    STANDARD.encode(blob.to_string())
}

/// The agent id inside a JIT configuration, if it is one this simulator issued.
pub(crate) fn decode_jit_config(encoded: &str) -> Option<i64> {
    let blob: Value = serde_json::from_slice(&STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let runner = blob.get(".runner")?.as_str()?;
    let runner: Value = serde_json::from_slice(&STANDARD.decode(runner).ok()?).ok()?;
    runner.get("AgentId")?.as_i64()
}

/// A field of a JSON object, matching the key case-insensitively (as the .NET service does).
pub(crate) fn field<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    object
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

/// Decodes a scale-set create or update body; absent and zero fields stay zero.
pub(crate) fn scale_set_input(body: &Value) -> ScaleSetInput {
    let name = field(body, "name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let group_id = field(body, "runnerGroupId")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    let labels = field(body, "labels")
        .and_then(Value::as_array)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|l| {
                    let name = field(l, "name")?.as_str()?.to_owned();
                    let kind = field(l, "type")
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                        .unwrap_or("System")
                        .to_owned();
                    (!name.is_empty()).then_some(Label { name, kind })
                })
                .collect()
        })
        .unwrap_or_default();
    let disable_update = field(body, "runnerSetting")
        .and_then(|s| field(s, "disableUpdate"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    ScaleSetInput {
        name,
        group_id,
        labels,
        disable_update,
    }
}

/// The runner application downloads (`GET …/actions/runners/downloads`), with URLs under
/// `origin` (`http://HOST`). No `temp_download_token`: github.com sends none for its public
/// release downloads, and the simulator's archives need no credential either.
pub(crate) fn runner_downloads(archives: &[Archive], origin: &str) -> Value {
    Value::Array(
        archives
            .iter()
            .map(|a| {
                json!({
                    "os": a.os,
                    "architecture": a.architecture,
                    "download_url": format!("{origin}{}", release_path(&a.filename)),
                    "filename": a.filename,
                    "sha256_checksum": a.sha256,
                })
            })
            .collect(),
    )
}

/// One resource of `GET /rate_limit`.
fn rate_resource(quota: &QuotaStatus, resource: &str) -> Value {
    json!({
        "limit": quota.limit,
        "remaining": quota.remaining,
        "reset": quota.reset,
        "used": quota.used,
        "resource": resource,
    })
}

/// `GET /rate_limit`: `resources.core` (and the deprecated top-level `rate`, its copy) carry the
/// simulated quota; the other resources are reported untouched.
pub(crate) fn rate_limit(core: &QuotaStatus, now: SimTime) -> Value {
    let fresh = |limit: u64, window_secs: u64| QuotaStatus {
        limit,
        remaining: limit,
        reset: now.as_secs().saturating_add(window_secs),
        used: 0,
    };
    json!({
        "resources": {
            "core": rate_resource(core, "core"),
            "search": rate_resource(&fresh(30, 60), "search"),
            "code_search": rate_resource(&fresh(10, 60), "code_search"),
            "graphql": rate_resource(&fresh(5000, 3600), "graphql"),
            "integration_manifest": rate_resource(&fresh(5000, 3600), "integration_manifest"),
            "actions_runner_registration": rate_resource(&fresh(10_000, 3600), "actions_runner_registration"),
        },
        "rate": rate_resource(core, "core"),
    })
}

/// The `x-ratelimit-*` headers GitHub sends with a REST answer.
pub(crate) fn rate_limit_headers(quota: &QuotaStatus) -> Vec<(&'static str, String)> {
    vec![
        ("x-ratelimit-limit", quota.limit.to_string()),
        ("x-ratelimit-remaining", quota.remaining.to_string()),
        ("x-ratelimit-reset", quota.reset.to_string()),
        ("x-ratelimit-used", quota.used.to_string()),
        ("x-ratelimit-resource", "core".to_owned()),
    ]
}

/// The current time as the REST API writes `expires_at`.
pub(crate) fn expires_at(at: SimTime) -> String {
    at.to_rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_scale_set_keys_case_insensitively() {
        let body = json!({
            "Name": "linux",
            "RUNNERGROUPID": 2,
            "labels": [{"name": "linux"}, {"name": "gpu", "type": "User"}, {"name": ""}],
            "RunnerSetting": {"DisableUpdate": true},
            "createdOn": "0001-01-01T00:00:00Z",
        });
        let input = scale_set_input(&body);
        assert_eq!(input.name, "linux");
        assert_eq!(input.group_id, 2);
        assert!(input.disable_update);
        assert_eq!(
            input.labels,
            vec![
                Label {
                    name: "linux".to_owned(),
                    kind: "System".to_owned()
                },
                Label {
                    name: "gpu".to_owned(),
                    kind: "User".to_owned()
                }
            ]
        );
        assert_eq!(
            scale_set_input(&json!({"runnerSetting": {}})),
            ScaleSetInput::default()
        );
    }

    proptest::proptest! {
        #[test]
        fn decoders_never_panic_on_arbitrary_input(text in ".*", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = decode_jit_config(&text);
            let _ = decode_jit_config(&STANDARD.encode(&bytes));
            let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::String(text.clone()));
            let _ = scale_set_input(&value);
            let _ = crate::scope::Scope::parse_path(&text);
            let _ = crate::scope::Scope::parse_url(&text);
            let _ = crate::app_auth::decode(&text);
            let mounts = crate::route::Mounts { actions_base: "/tenant/1/".to_owned(), queue: "/scalesets/message".to_owned() };
            let _ = crate::route::route(&http::Method::GET, &text, &mounts);
            let _ = crate::route::route(&http::Method::POST, &format!("/tenant/1/{text}"), &mounts);
        }
    }

    #[test]
    fn job_events_render_as_the_service_writes_them() {
        let job = Job {
            request_id: 7,
            wire_request_id: 0,
            job_id: "j-7".to_owned(),
            repository: "widgets".to_owned(),
            owner: "acme".to_owned(),
            workflow_ref: "acme/widgets/.github/workflows/ci.yml@refs/heads/main".to_owned(),
            display_name: "job 7".to_owned(),
            run_id: 1000,
            event_name: "push".to_owned(),
            labels: vec!["linux".to_owned()],
            result: "succeeded".to_owned(),
            run_for: None,
            queue_time: SimTime::from_millis(1_796_205_600_123),
            assigned_at: None,
            runner_assigned_at: None,
            finished_at: None,
            state: crate::state::JobState::Queued,
            reassignments: 0,
            runner: None,
        };
        let available = job_event(&JobEvent::Available(job.clone()));
        assert_eq!(available["messageType"], "JobAvailable");
        assert_eq!(available["acquireJobUrl"], "acquirejobs/7");
        assert_eq!(available["runnerRequestId"], 0);
        assert_eq!(available["queueTime"], "2026-12-02T10:00:00.1230000Z");
        assert_eq!(available["finishTime"], "0001-01-01T00:00:00Z");
        assert!(available.get("runnerId").is_none());
        let started = job_event(&JobEvent::Started {
            job: job.clone(),
            runner: (3, "r-3".to_owned()),
        });
        assert_eq!(
            (
                &started["messageType"],
                &started["runnerId"],
                &started["runnerName"]
            ),
            (&json!("JobStarted"), &json!(3), &json!("r-3"))
        );
        assert!(started.get("acquireJobUrl").is_none());
        assert!(started.get("result").is_none());
        let canceled = job_event(&JobEvent::Completed {
            job,
            runner: None,
            result: "canceled".to_owned(),
        });
        assert_eq!(
            (
                &canceled["runnerId"],
                &canceled["runnerName"],
                &canceled["result"]
            ),
            (&json!(0), &json!(""), &json!("canceled"))
        );
    }

    #[test]
    fn jit_configs_round_trip_and_reject_garbage() {
        let agent = Agent {
            id: 42,
            scope: crate::scope::Scope::Organization("acme".to_owned()),
            name: "r1".to_owned(),
            scale_set_id: 3,
            created_on: SimTime::from_millis(0),
            phase: crate::state::AgentPhase::Registered,
        };
        let blob = encode_jit_config(&agent, "http://x/", "");
        assert_eq!(decode_jit_config(&blob), Some(42));
        assert_eq!(decode_jit_config("not base64!"), None);
        assert_eq!(decode_jit_config(&STANDARD.encode("{}")), None);
    }
}
