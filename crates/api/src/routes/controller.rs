//! `GET /api/v1/controller`: the controller's id, version and owner label.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};

use crate::state::AppState;
use crate::v1::{ControllerInfo, ErrorBody};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/controller", get(show))
}

/// Who this controller is.
#[utoipa::path(get, path = "/api/v1/controller", tag = "controller",
    operation_id = "show_controller",
    responses(
        (status = 200, description = "This controller's identity and version", body = ControllerInfo),
        (status = 401, description = "No or an invalid token", body = ErrorBody),
    ))]
pub(crate) async fn show(State(state): State<Arc<AppState>>) -> Json<ControllerInfo> {
    Json(ControllerInfo {
        id: state.identity.id(),
        version: state.version.to_owned(),
        owner_label: state.identity.owner_label(),
        owner_label_enabled: state.identity.owner_label_enabled(),
        session_owner: state.identity.session_owner(),
    })
}
