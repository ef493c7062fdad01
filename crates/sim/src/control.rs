//! The control API under `/_sim/`: JSON over HTTP for the operations of the [`crate::Simulator`]
//! handle (documented in `docs/simulator.md`).

use std::time::Duration;

use http::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Simulator;
use crate::error::Error;
use crate::exception::ApiError;
use crate::fault::Faults;
use crate::request::{Outcome, Reply, Request};
use crate::route::Endpoint;
use crate::simulator::Shared;
use crate::snapshot::JobSpec;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EnqueueBody {
    scale_set_id: i64,
    #[serde(flatten)]
    spec: JobSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PatBody {
    token: String,
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AdvanceBody {
    seconds: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ForeignBody {
    scope: String,
    name: String,
    owner_name: String,
    #[serde(default)]
    runner_group_id: i64,
    #[serde(default)]
    labels: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GroupBody {
    scope: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RunnerBody {
    jit_config: String,
}

fn parse<T: serde::de::DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    serde_json::from_slice(&req.body)
        .map_err(|e| ApiError::control(400, format!("invalid JSON body: {e}")))
}

fn fail(error: &Error) -> ApiError {
    ApiError::control(error.status(), error.to_string())
}

/// Handles one control request.
pub(crate) fn handle(shared: &std::sync::Arc<Shared>, req: &Request) -> Outcome {
    let Endpoint::Control(path) = &req.endpoint else {
        return Err(ApiError::RouterNotFound);
    };
    let sim = Simulator {
        shared: shared.clone(),
    };
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match (&req.method, segments.as_slice()) {
        (&Method::GET, ["state"]) => Ok(Reply::json(200, to_json(&sim.state()))),
        (&Method::POST, ["jobs"]) => {
            let body: EnqueueBody = parse(req)?;
            let ids = sim
                .enqueue_jobs(body.scale_set_id, &body.spec)
                .map_err(|e| fail(&e))?;
            Ok(Reply::json(200, json!({ "runnerRequestIds": ids })))
        }
        (&Method::GET, ["requests"]) => Ok(Reply::json(
            200,
            json!({ "counts": sim.request_counts(), "log": to_json(&sim.request_log()) }),
        )),
        (&Method::DELETE, ["requests"]) => {
            sim.clear_requests();
            Ok(Reply::empty(204))
        }
        (&Method::GET, ["faults"]) => Ok(Reply::json(200, to_json(&sim.faults()))),
        (&Method::PUT, ["faults"]) => {
            let faults: Faults = parse(req)?;
            sim.set_faults(faults);
            Ok(Reply::json(200, to_json(&sim.faults())))
        }
        (&Method::GET, ["polls"]) => {
            Ok(Reply::json(200, json!({ "waiting": sim.waiting_polls() })))
        }
        (&Method::GET, ["listening"]) => {
            let scope = req
                .query("scope")
                .ok_or_else(|| ApiError::control(400, "the query parameter scope is required"))?;
            let listening = sim.listening(scope).map_err(|e| fail(&e))?;
            Ok(Reply::json(200, to_json(&listening)))
        }
        (&Method::GET, ["pats"]) => Ok(Reply::json(200, to_json(&sim.pat_uses()))),
        (&Method::POST, ["pats"]) => {
            let body: PatBody = parse(req)?;
            if body.token.is_empty() {
                return Err(ApiError::control(400, "token must not be empty"));
            }
            sim.add_pat(crate::PatSeed {
                token: body.token,
                scopes: body.scopes,
            });
            Ok(Reply::empty(204))
        }
        (&Method::POST, ["pats", "revoke"]) => {
            let body: PatBody = parse(req)?;
            if sim.revoke_pat(&body.token) {
                Ok(Reply::empty(204))
            } else {
                Err(ApiError::control(404, "no such PAT was ever accepted"))
            }
        }
        (&Method::GET, ["time"]) => Ok(Reply::json(200, time(&sim))),
        (&Method::POST, ["time", "advance"]) => {
            let body: AdvanceBody = parse(req)?;
            let by = Duration::try_from_secs_f64(body.seconds).map_err(|_| {
                ApiError::control(400, "seconds must be a non-negative, representable number")
            })?;
            sim.advance(by);
            Ok(Reply::json(200, time(&sim)))
        }
        (&Method::DELETE, ["scalesets", id]) => {
            let id = parse_id(id)?;
            let deleted = match req.query("keepRunners") {
                None | Some("false") => sim.delete_scale_set(id),
                Some("true") => sim.delete_scale_set_keeping_runners(id),
                Some(other) => {
                    return Err(ApiError::control(
                        400,
                        format!("keepRunners must be true or false, not {other:?}"),
                    ));
                }
            };
            deleted.map_err(|e| fail(&e))?;
            Ok(Reply::empty(204))
        }
        (&Method::POST, ["scalesets", id, "evict-session"]) => {
            let id = parse_id(id)?;
            sim.evict_session(id).map_err(|e| fail(&e))?;
            Ok(Reply::empty(204))
        }
        (&Method::POST, ["foreign"]) => {
            let body: ForeignBody = parse(req)?;
            let foreign = sim
                .create_foreign_scale_set_with_labels(
                    &body.scope,
                    body.runner_group_id,
                    &body.name,
                    &body.owner_name,
                    &body.labels,
                )
                .map_err(|e| fail(&e))?;
            Ok(Reply::json(200, to_json(&foreign)))
        }
        (&Method::POST, ["runner-groups"]) => {
            let body: GroupBody = parse(req)?;
            let id = sim
                .create_runner_group(&body.scope, &body.name)
                .map_err(|e| fail(&e))?;
            Ok(Reply::json(200, json!({ "id": id })))
        }
        (&Method::POST, ["runners"]) => {
            let body: RunnerBody = parse(req)?;
            let id = sim.start_runner(&body.jit_config).map_err(|e| fail(&e))?;
            Ok(Reply::json(200, json!({ "agentId": id })))
        }
        (&Method::POST, ["runners", id, "disconnect"]) => {
            let id = parse_id(id)?;
            sim.disconnect_runner(id).map_err(|e| fail(&e))?;
            Ok(Reply::empty(204))
        }
        _ => Err(ApiError::control(
            404,
            format!("no control route {} /_sim/{path}", req.method),
        )),
    }
}

fn parse_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::control(400, format!("{raw:?} is not an id")))
}

fn time(sim: &Simulator) -> Value {
    json!({
        "now": sim.now().to_rfc3339(),
        "nowMillis": sim.now().as_millis(),
        "offsetSeconds": sim.time_offset().as_secs_f64(),
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
