//! `/api/v1/events`: the event trails of every scale set, or of one, newest ones first chosen
//! and answered oldest first; `since` and `after` narrow them (`after` is how
//! `scalesetctl events --follow` asks for what is new).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use scaleset_store::{EventFilter, ScaleSetId, Timestamp};
use serde::Deserialize;

use crate::error::ApiError;
use crate::extract::Params;
use crate::state::AppState;
use crate::v1::{ErrorBody, EventList, FleetEvent};
use crate::view;

/// How many events an answer holds when `limit` is not given.
const DEFAULT_LIMIT: u32 = 100;
/// The most events one answer holds.
const MAX_LIMIT: u32 = 1000;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/events", get(list))
}

/// Query of the event list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventsQuery {
    /// Only this scale set's events.
    scale_set_id: Option<uuid::Uuid>,
    /// Only events that happened at or after this time (RFC 3339, e.g.
    /// `2026-12-06T10:00:00Z`); a repeated event counts by its last occurrence.
    #[param(format = DateTime)]
    since: Option<String>,
    /// Only events appended after the one with this id (the `id` of the last event seen).
    after: Option<i64>,
    /// At most this many, the newest of those that match (default 100, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// The newest events of every scale set (or one), oldest first.
#[utoipa::path(get, path = "/api/v1/events", tag = "scale-sets", operation_id = "list_events",
    params(EventsQuery),
    responses(
        (status = 200, description = "The newest events that match, oldest first", body = EventList),
        (status = 400, description = "A malformed parameter (since not RFC 3339, limit out of range)", body = ErrorBody),
        (status = 401, description = "No valid API token", body = ErrorBody),
        (status = 404, description = "No scale set has the scale_set_id given", body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Params(query): Params<EventsQuery>,
) -> Result<Json<EventList>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::InvalidParameter {
            reason: format!("limit {limit} is out of range: give 1 to {MAX_LIMIT}"),
        });
    }
    let since = query.since.as_deref().map(parse_time).transpose()?;
    let names: HashMap<ScaleSetId, String> = state
        .store
        .list_scale_sets(None)
        .await
        .map_err(ApiError::store("listing scale sets", || {
            "scale sets".to_owned()
        }))?
        .into_iter()
        .map(|s| (s.id, s.spec.name().to_string()))
        .collect();
    let scale_set_id = query.scale_set_id.map(ScaleSetId);
    if let Some(id) = scale_set_id
        && !names.contains_key(&id)
    {
        return Err(ApiError::NotFound {
            what: format!("scale set {id}"),
        });
    }
    let events = state
        .store
        .list_recent_events(EventFilter {
            scale_set_id,
            since,
            after: query.after,
            limit,
        })
        .await
        .map_err(ApiError::store("reading events", || "events".to_owned()))?;
    let items = events
        .iter()
        .map(|e| FleetEvent {
            id: e.id,
            scale_set_id: e.scale_set_id.0,
            // A scale set deleted between the two reads: its events went with it.
            scale_set: names.get(&e.scale_set_id).cloned().unwrap_or_default(),
            kind: e.kind.as_str().to_owned(),
            code: e.code.as_str().to_owned(),
            reason: e.reason.clone(),
            at: view::time(e.at),
            count: e.count,
            last_at: view::time(e.last_at),
        })
        .collect();
    Ok(Json(EventList { items }))
}

/// An RFC 3339 time as stored.
fn parse_time(text: &str) -> Result<Timestamp, ApiError> {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| ApiError::InvalidParameter {
            reason: format!(
                "since {text:?} is not an RFC 3339 time ({e}); give one like \
                 2026-12-06T10:00:00Z"
            ),
        })?;
    let millis = at.unix_timestamp_nanos() / 1_000_000;
    Ok(Timestamp::from_unix_millis(
        i64::try_from(millis).unwrap_or(i64::MAX),
    ))
}
