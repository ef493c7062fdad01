//! `POST /api/v1/workers/{name}/drain`: hands a worker's scale sets to the other workers before
//! it is stopped (issue 33 item 4).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router};

use crate::error::ApiError;
use crate::state::AppState;
use crate::v1::{DrainWorkerResult, ErrorBody};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/workers/{name}/drain", post(drain))
}

/// Drains a worker: it stops serving its scale sets (each task deletes its session and releases
/// its lease) and takes no other, and the other live workers take them at their next watch
/// interval (busy runners keep running: the taker re-records them and retires them when their
/// jobs end). The answer says how many leases it still holds; asking again changes nothing and
/// is how to watch it. The drain lasts until the worker stops (or restarts): stop it once
/// `drained` is true.
#[utoipa::path(post, path = "/api/v1/workers/{name}/drain", tag = "workers",
    operation_id = "drain_worker",
    params(("name" = String, Path, description = "The worker's name (`worker.name`)")),
    responses(
        (status = 200, description = "Draining (or drained): how many leases it still holds", body = DrainWorkerResult),
        (status = 400, description = "Not a worker name (empty, too long or holding a control character)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No live worker of that name", body = ErrorBody),
    ))]
pub(crate) async fn drain(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<DrainWorkerResult>, ApiError> {
    // The one rule of a worker's name, as the configuration file's `worker.name` follows it.
    if let Some(reason) = scaleset_store::worker_name_problem(&name) {
        return Err(ApiError::InvalidParameter {
            reason: format!("worker name {reason}"),
        });
    }
    let what = || {
        format!(
            "live worker {name:?} (a worker whose heartbeat is current; workers are named by \
             worker.name)"
        )
    };
    let found = state
        .store
        .drain_worker(&name)
        .await
        .map_err(ApiError::store("draining a worker", what))?;
    if !found {
        return Err(ApiError::NotFound { what: what() });
    }
    let leases = state
        .store
        .live_leases()
        .await
        .map_err(ApiError::store("listing the leases", what))?
        .into_iter()
        .filter(|lease| lease.holder == name)
        .count();
    Ok(Json(DrainWorkerResult {
        name: name.clone(),
        leases: u64::try_from(leases).unwrap_or(u64::MAX),
        drained: leases == 0,
    }))
}
