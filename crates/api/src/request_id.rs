//! The outermost layer: gives every request an id (sent back as `x-request-id`, logged in the
//! request's `http.request` span), renders [`crate::ApiError`]s as the JSON [`ErrorBody`] with
//! that id, and counts responses by route and status for `/metrics`.
//!
//! [`ErrorBody`]: crate::v1::ErrorBody

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument as _;

use crate::error::{Failure, render};
use crate::state::AppState;

/// The id of the request being served (a UUID), as a request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

/// The header the id is sent back in.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Middleware: see the module docs.
pub(crate) async fn layer(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let id = RequestId(uuid::Uuid::new_v4().to_string());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().clone();
    request.extensions_mut().insert(id.clone());
    let span = tracing::info_span!(
        "http.request",
        method = %method,
        route = %route,
        request_id = %id.0,
    );
    let mut response = next.run(request).instrument(span).await;
    if let Some(failure) = response.extensions_mut().remove::<Failure>() {
        let status = response.status();
        let mut rendered = render(&failure, &id.0, status);
        for (name, value) in response.headers() {
            if name != axum::http::header::CONTENT_TYPE
                && name != axum::http::header::CONTENT_LENGTH
            {
                rendered.headers_mut().insert(name.clone(), value.clone());
            }
        }
        response = rendered;
    }
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    state
        .http_metrics
        .count(method.as_str(), &route, response.status().as_u16());
    response
}
