//! The Actions-service ("admin") endpoints: runner groups, scale sets, sessions, acquirable and
//! acquired jobs, JIT configurations and agents, answered with the reference's exact statuses.

use serde_json::{Value, json};

use crate::auth::{admin_scope, queue_grant};
use crate::config::AssignmentMode;
use crate::exception::ApiError;
use crate::fault::RaceCreate;
use crate::protocol;
use crate::request::{Outcome, Reply, Request};
use crate::scope::Scope;
use crate::simulator::{Shared, lock};
use crate::state::{ScaleSetInput, Session, State};
use crate::token::Grant;

/// The tenant of an Actions-service call: its admin token's scope (401
/// `InvalidTokenException` otherwise), once the call names an `api-version` (400
/// `VssVersionNotSpecifiedException` otherwise).
pub(crate) fn tenant(shared: &Shared, req: &Request) -> Result<Scope, ApiError> {
    let scope = admin_scope(shared, req)?;
    if req.query("api-version").is_none() {
        return Err(ApiError::exception(
            400,
            "VssVersionNotSpecifiedException",
            "The API version must be specified (api-version=6.0-preview).",
        ));
    }
    Ok(scope)
}

/// The Actions service URL as the client addressed it (ending in `/`).
fn base_url(shared: &Shared, req: &Request) -> String {
    format!("{}{}", req.origin, shared.mounts.actions_base)
}

/// `GET runnergroups/[?groupName=]`.
pub(crate) fn list_runner_groups(shared: &Shared, req: &Request, scope: &Scope) -> Outcome {
    let state = lock(&shared.state);
    let groups = state.groups(scope, req.query("groupName"));
    let value = groups
        .iter()
        .map(|g| {
            let size = state.find_scale_sets(scope, Some(g.id), None).len();
            protocol::runner_group(g, size)
        })
        .collect();
    Ok(Reply::json(200, protocol::envelope(value)))
}

/// `GET runnerscalesets[?runnerGroupId=&name=]`.
pub(crate) fn list_scale_sets(shared: &Shared, req: &Request, scope: &Scope) -> Outcome {
    let base_url = base_url(shared, req);
    let group = match req.query("runnerGroupId") {
        None | Some("") => None,
        Some(raw) => Some(raw.parse::<i64>().map_err(|_| {
            ApiError::exception(
                400,
                "ArgumentException",
                format!("runnerGroupId {raw:?} is not an integer."),
            )
        })?),
    };
    let faults = lock(&shared.faults).clone();
    let name = if faults.ignore_name_filter {
        None
    } else {
        req.query("name")
    };
    let state = lock(&shared.state);
    let value = state
        .find_scale_sets(scope, group, name)
        .into_iter()
        .map(|s| {
            let mut item = render_set(&state, s.id, scope, &base_url);
            if group.is_some()
                && faults.omit_runner_group_id
                && let Some(object) = item.as_object_mut()
            {
                object.remove("runnerGroupId");
                object.remove("runnerGroupName");
            }
            item
        })
        .collect();
    Ok(Reply::json(200, protocol::envelope(value)))
}

/// `GET runnerscalesets/{id}`.
pub(crate) fn get_scale_set(shared: &Shared, req: &Request, scope: &Scope, id: i64) -> Outcome {
    let base_url = base_url(shared, req);
    let state = lock(&shared.state);
    state.scale_set(scope, id)?;
    Ok(Reply::json(200, render_set(&state, id, scope, &base_url)))
}

/// `POST runnerscalesets` (200, as the service answers).
pub(crate) fn create_scale_set(shared: &Shared, req: &Request, scope: &Scope) -> Outcome {
    let base_url = base_url(shared, req);
    let now = shared.clock.now();
    let input = protocol::scale_set_input(&req.json());
    let race = lock(&shared.faults).race_create.take();
    let mut state = lock(&shared.state);
    if let Some(race) = race {
        competitor_create(&mut state, scope, &input, &race, now);
    }
    let id = state.create_scale_set(scope, input, now)?;
    tracing::info!(scale_set.id = id, %scope, "scale set created");
    Ok(Reply::json(200, render_set(&state, id, scope, &base_url)))
}

/// `PATCH runnerscalesets/{id}`: zero values keep the current ones.
pub(crate) fn update_scale_set(shared: &Shared, req: &Request, scope: &Scope, id: i64) -> Outcome {
    let base_url = base_url(shared, req);
    let patch = protocol::scale_set_input(&req.json());
    let mut state = lock(&shared.state);
    state.update_scale_set(scope, id, patch)?;
    Ok(Reply::json(200, render_set(&state, id, scope, &base_url)))
}

/// `DELETE runnerscalesets/{id}` (204).
pub(crate) fn delete_scale_set(shared: &Shared, scope: &Scope, id: i64) -> Outcome {
    let mut state = lock(&shared.state);
    state.scale_set(scope, id)?;
    state.delete_scale_set(id);
    tracing::info!(scale_set.id = id, %scope, "scale set deleted");
    Ok(Reply::empty(204))
}

/// `POST runnerscalesets/{id}/sessions`: the one session of the scale set.
pub(crate) fn create_session(shared: &Shared, req: &Request, scope: &Scope, id: i64) -> Outcome {
    let base_url = base_url(shared, req);
    let now = shared.clock.now();
    let body = req.json();
    let owner = protocol::field(&body, "ownerName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let names_owner = lock(&shared.faults).conflict_names_owner;
    let mut state = lock(&shared.state);
    let session = state.create_session(scope, id, &owner, now, names_owner)?;
    tracing::info!(scale_set.id = id, owner = %owner, "session opened");
    Ok(Reply::json(
        200,
        render_session(shared, &state, scope, id, &session, &req.origin, &base_url),
    ))
}

/// `PATCH runnerscalesets/{id}/sessions/{sid}`.
pub(crate) fn refresh_session(
    shared: &Shared,
    req: &Request,
    scope: &Scope,
    id: i64,
    sid: &str,
) -> Outcome {
    let base_url = base_url(shared, req);
    let now = shared.clock.now();
    let mut state = lock(&shared.state);
    let session = state.refresh_session(scope, id, sid, now)?;
    Ok(Reply::json(
        200,
        render_session(shared, &state, scope, id, &session, &req.origin, &base_url),
    ))
}

/// `DELETE runnerscalesets/{id}/sessions/{sid}` (204).
pub(crate) fn delete_session(shared: &Shared, scope: &Scope, id: i64, sid: &str) -> Outcome {
    let now = shared.clock.now();
    lock(&shared.state).delete_session(scope, id, sid, now)?;
    tracing::info!(scale_set.id = id, "session closed");
    Ok(Reply::empty(204))
}

/// `GET runnerscalesets/{id}/acquirablejobs` (204 when empty).
pub(crate) fn acquirable_jobs(shared: &Shared, req: &Request, scope: &Scope, id: i64) -> Outcome {
    let base_url = base_url(shared, req);
    let jobs = lock(&shared.state).acquirable(scope, id)?;
    if jobs.is_empty() {
        return Ok(Reply::empty(204));
    }
    let value = jobs
        .iter()
        .map(|j| {
            json!({
                "acquireJobUrl": format!("{base_url}_apis/runtime/runnerscalesets/{id}/acquirejobs"),
                "messageType": "JobAvailable",
                "runnerRequestId": j.request_id,
                "repositoryName": j.repository,
                "ownerName": j.owner,
                "jobWorkflowRef": j.workflow_ref,
                "eventName": j.event_name,
                "requestLabels": j.labels,
            })
        })
        .collect();
    Ok(Reply::json(200, protocol::envelope(value)))
}

/// `GET agents/{id}`.
pub(crate) fn get_agent(shared: &Shared, scope: &Scope, rid: i64) -> Outcome {
    let state = lock(&shared.state);
    let agent = state.agent(scope, rid)?;
    Ok(Reply::json(200, render_agent(&state, agent)))
}

/// `GET agents[?agentName=]`.
pub(crate) fn list_agents(shared: &Shared, req: &Request, scope: &Scope) -> Outcome {
    let state = lock(&shared.state);
    let value = state
        .find_agents(scope, req.query("agentName"))
        .into_iter()
        .map(|a| render_agent(&state, a))
        .collect();
    Ok(Reply::json(200, protocol::envelope(value)))
}

/// `DELETE agents/{id}` (204): refused while the agent runs a job.
pub(crate) fn delete_agent(shared: &Shared, scope: &Scope, rid: i64) -> Outcome {
    lock(&shared.state).remove_agent(scope, rid)?;
    Ok(Reply::empty(204))
}

/// `POST acquirejobs`: authorised by the queue token, not the admin token.
pub(crate) fn acquire_jobs(shared: &Shared, req: &Request, id: i64) -> Outcome {
    if shared.config.assignment == AssignmentMode::AutoAssign {
        // github.com's broker has no such route.
        return Err(ApiError::RouterNotFound);
    }
    let (scale_set, _) = queue_grant(shared, req)?;
    if scale_set != id {
        return Err(ApiError::Unauthorized);
    }
    let ids: Vec<i64> = match req.json() {
        Value::Array(items) => items.iter().filter_map(Value::as_i64).collect(),
        _ => {
            return Err(ApiError::exception(
                400,
                "ArgumentException",
                "The request body must be a JSON array of runner request ids.",
            ));
        }
    };
    let won = lock(&shared.state).acquire(id, &ids);
    Ok(Reply::json(
        200,
        json!({ "count": won.len(), "value": won }),
    ))
}

/// `POST runnerscalesets/{id}/generatejitconfig`: registers an agent and returns its JIT
/// configuration.
pub(crate) fn generate_jit_config(
    shared: &Shared,
    req: &Request,
    scope: &Scope,
    id: i64,
) -> Outcome {
    let body = req.json();
    let name = protocol::field(&body, "name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let work_folder = protocol::field(&body, "workFolder")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let now = shared.clock.now();
    let mut state = lock(&shared.state);
    let agent = state.register_agent(scope, id, &name, now)?;
    let server_url = format!("{}{}", req.origin, shared.mounts.actions_base);
    let encoded = protocol::encode_jit_config(&agent, &server_url, &work_folder);
    Ok(Reply::json(
        200,
        json!({ "runner": render_agent(&state, &agent), "encodedJITConfig": encoded }),
    ))
}

fn competitor_create(
    state: &mut State,
    scope: &Scope,
    input: &ScaleSetInput,
    race: &RaceCreate,
    now: crate::clock::SimTime,
) {
    let competitor = ScaleSetInput {
        name: input.name.clone(),
        group_id: input.group_id,
        ..ScaleSetInput::default()
    };
    if let Ok(id) = state.create_scale_set(scope, competitor, now)
        && let Some(owner) = &race.owner_name
    {
        let _ = state.create_session(scope, id, owner, now, false);
    }
}

fn render_set(state: &State, id: i64, scope: &Scope, base_url: &str) -> Value {
    let Ok(set) = state.scale_set(scope, id) else {
        return Value::Null;
    };
    let group = state
        .groups(scope, None)
        .into_iter()
        .find(|g| g.id == set.group_id);
    protocol::scale_set(
        set,
        group.as_ref().map(|g| g.name.as_str()),
        &state.statistics(id),
        base_url,
    )
}

fn render_session(
    shared: &Shared,
    state: &State,
    scope: &Scope,
    id: i64,
    session: &Session,
    origin: &str,
    base_url: &str,
) -> Value {
    let now = shared.clock.now();
    let token = shared.signer.mint(
        Grant::Queue {
            scale_set: id,
            session: session.id.clone(),
        },
        now,
        shared.config.queue_token_ttl,
    );
    let queue_url = if lock(&shared.faults).empty_message_queue_url {
        String::new()
    } else {
        format!("{origin}{}", shared.mounts.queue)
    };
    protocol::session(
        session,
        render_set(state, id, scope, base_url),
        &queue_url,
        &token,
        &state.statistics(id),
    )
}

fn render_agent(state: &State, agent: &crate::state::Agent) -> Value {
    let group = state.scale_sets.get(&agent.scale_set_id).and_then(|s| {
        state
            .groups(&s.scope, None)
            .into_iter()
            .find(|g| g.id == s.group_id)
    });
    protocol::agent(agent, group.as_ref())
}
