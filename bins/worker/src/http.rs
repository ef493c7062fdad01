//! The worker's small HTTP listener: `/healthz` (the process answers), `/readyz` (the store
//! answers and this worker holds at least one scale set's lease; the body says how many) and `/metrics`
//! (the control loop's registry in the Prometheus text format).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;
use scaleset_store::{Clock as _, Store, SystemClock};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the handlers read.
pub(crate) struct State {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) registry: Registry,
    pub(crate) worker: String,
}

/// Serves until `cancel` fires.
pub(crate) async fn serve(listener: TcpListener, state: Arc<State>, cancel: CancellationToken) {
    loop {
        let (stream, _) = tokio::select! {
            () = cancel.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting an HTTP connection failed");
                    continue;
                }
            },
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(handle(&state, &request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn text(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = header::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

async fn handle(state: &State, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    if request.method() != Method::GET {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "GET only\n".to_owned(),
        );
    }
    match request.uri().path() {
        "/healthz" => text(StatusCode::OK, "text/plain", "ok\n".to_owned()),
        "/readyz" => ready(state).await,
        "/metrics" => {
            let mut body = String::new();
            match prometheus_client::encoding::text::encode(&mut body, &state.registry) {
                Ok(()) => text(
                    StatusCode::OK,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    body,
                ),
                Err(e) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain",
                    format!("cannot encode the metrics: {e}\n"),
                ),
            }
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found; try /healthz, /readyz or /metrics\n".to_owned(),
        ),
    }
}

async fn ready(state: &State) -> Response<Full<Bytes>> {
    let scale_sets = match state.store.list_scale_sets(None).await {
        Ok(s) => s,
        Err(e) => {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "application/json",
                serde_json::json!({ "ready": false, "store": e.to_string() }).to_string(),
            );
        }
    };
    let now = SystemClock.now();
    let mut held = 0usize;
    for scale_set in scale_sets.iter().filter(|s| s.spec.enabled) {
        if let Ok(Some(lease)) = state.store.get_lease(scale_set.id).await
            && lease.holder == state.worker
            && lease.expires_at > now
        {
            held += 1;
        }
    }
    // Ready means serving: a worker that holds no lease (starting, or standing by while the
    // other workers hold every scale set) is not.
    let ready = held > 0;
    let mut body = serde_json::json!({
        "ready": ready,
        "store": "ok",
        "worker": state.worker,
        "scaleSets": scale_sets.iter().filter(|s| s.spec.enabled).count(),
        "leasesHeld": held,
    });
    if !ready {
        body["reason"] = "this worker holds no scale set's lease yet (starting, or the other \
                          workers hold them all)"
            .into();
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    text(status, "application/json", body.to_string())
}
