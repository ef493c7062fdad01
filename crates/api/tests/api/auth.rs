//! Every `/api/v1` route refuses a request without a valid bearer token (401, the documented
//! body, `WWW-Authenticate`), before reading any body, and writes nothing; the probes, the
//! metrics and the OpenAPI document are public.

use serde_json::json;

use crate::helpers::{App, Backend, backend_tests};

/// Every authenticated route, with a body where it takes one.
fn routes() -> Vec<(&'static str, String, Option<serde_json::Value>)> {
    let id = uuid::Uuid::new_v4();
    let credentials = json!({"name": "c", "auth": {"kind": "pat", "token": "ghp_x"}});
    vec![
        ("GET", "/api/v1/controller".into(), None),
        ("GET", "/api/v1/credentials".into(), None),
        (
            "POST",
            "/api/v1/credentials".into(),
            Some(credentials.clone()),
        ),
        ("GET", format!("/api/v1/credentials/{id}"), None),
        (
            "PUT",
            format!("/api/v1/credentials/{id}"),
            Some(credentials),
        ),
        ("DELETE", format!("/api/v1/credentials/{id}"), None),
        ("GET", "/api/v1/entities".into(), None),
        (
            "POST",
            "/api/v1/entities".into(),
            Some(json!({"kind": "organization", "name": "acme", "credentials": "c"})),
        ),
        ("GET", format!("/api/v1/entities/{id}"), None),
        ("DELETE", format!("/api/v1/entities/{id}"), None),
        ("GET", "/api/v1/scale-sets".into(), None),
        (
            "POST",
            "/api/v1/scale-sets".into(),
            Some(json!({"entity_id": id, "name": "linux", "provider": "fake", "max_runners": 2})),
        ),
        ("GET", format!("/api/v1/scale-sets/{id}"), None),
        (
            "PATCH",
            format!("/api/v1/scale-sets/{id}"),
            Some(json!({"generation": 1})),
        ),
        ("DELETE", format!("/api/v1/scale-sets/{id}"), None),
        ("GET", format!("/api/v1/scale-sets/{id}/instances"), None),
        ("GET", "/api/v1/instances".into(), None),
        ("GET", "/api/v1/instances/linux-abcdefgh".into(), None),
        ("DELETE", "/api/v1/instances/linux-abcdefgh".into(), None),
        ("GET", "/api/v1/tokens".into(), None),
        ("DELETE", "/api/v1/tokens/nobody".into(), None),
    ]
}

async fn every_route_needs_a_valid_token(backend: Backend) {
    let app = App::start(backend, "every_route_needs_a_valid_token").await;
    let before = app.written().await;
    let forged = format!("Bearer {}x", app.token);
    for (method, path, body) in routes() {
        let bytes = body.map(|b| b.to_string().into_bytes());
        for (authorization, code) in [
            (None, "missing_token"),
            (Some("Basic dXNlcjpwYXNz"), "missing_token"),
            (Some("Bearer"), "missing_token"),
            (Some("Bearer sst_not-a-token"), "invalid_token"),
            (Some(forged.as_str()), "invalid_token"),
        ] {
            let answer = app
                .raw(
                    method,
                    &path,
                    authorization,
                    bytes.clone(),
                    "application/json",
                )
                .await;
            let message = answer.error(401, code);
            assert!(
                message.contains("scaleset-server token create"),
                "{method} {path}: {message}"
            );
            assert_eq!(
                answer.www_authenticate.as_deref(),
                Some("Bearer realm=\"scaleset\""),
                "{method} {path}"
            );
        }
        // An unauthenticated request announcing a body far over the limit is answered 401
        // without the body ever being sent: it is never read.
        let head = app.head_only(method, &path, 100 * 1024 * 1024).await;
        assert!(head.starts_with("HTTP/1.1 401"), "{method} {path}: {head}");
        assert!(head.contains("missing_token"), "{method} {path}: {head}");
        // The same request with the token reaches the handler (whatever it then answers).
        let answer = app.call(method, &path, None).await;
        assert_ne!(
            answer.status, 401,
            "{method} {path} refused a valid token: {answer:?}"
        );
    }
    assert_eq!(
        app.written().await,
        before,
        "an unauthenticated request wrote something"
    );
}

async fn a_revoked_token_is_refused(backend: Backend) {
    let app = App::start(backend, "a_revoked_token_is_refused").await;
    use scaleset_store::{ApiTokenStore as _, ExposeSecret as _};
    let (record, secret) = app.store.create_api_token("short-lived").await.unwrap();
    let bearer = format!("Bearer {}", secret.expose_secret());
    let answer = app
        .raw("GET", "/api/v1/controller", Some(&bearer), None, "")
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    app.store.revoke_api_token(record.id).await.unwrap();
    let answer = app
        .raw("GET", "/api/v1/controller", Some(&bearer), None, "")
        .await;
    answer.error(401, "invalid_token");
}

async fn probes_metrics_and_the_document_are_public(backend: Backend) {
    let app = App::start(backend, "probes_metrics_and_the_document_are_public").await;
    let health = app.raw("GET", "/healthz", None, None, "").await;
    assert_eq!((health.status, health.text.as_str()), (200, "ok\n"));
    let ready = app.raw("GET", "/readyz", None, None, "").await;
    // The one meaning of readiness: the store answers; an API-only server reports no leases.
    assert_eq!(ready.status, 200, "{}", ready.text);
    let readiness: scaleset_api::v1::Readiness =
        serde_json::from_str(&ready.text).expect("readyz is a Readiness");
    assert!(readiness.ready);
    assert_eq!(readiness.store, "ok");
    assert_eq!(readiness.leases_held, None);
    let doc = app.raw("GET", "/api/v1/openapi.json", None, None, "").await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.text, scaleset_api::openapi::json());
    // A counted request shows in the metrics with its route and status.
    app.raw("GET", "/api/v1/controller", None, None, "").await;
    let metrics = app.raw("GET", "/metrics", None, None, "").await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.text.contains(
            "scaleset_api_requests_total{method=\"GET\",route=\"/api/v1/controller\",status=\"401\"} 1"
        ),
        "{}",
        metrics.text
    );
    assert!(
        metrics
            .text
            .contains("scaleset_undecodable_messages_total 0"),
        "control's metrics are registered: {}",
        metrics.text
    );
}

/// The samples of an exposition named `name`: their labels and value.
fn samples_named(text: &str, name: &str) -> Vec<(Vec<(String, String)>, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, labels) = match series.split_once('{') {
                Some((metric, rest)) => (metric, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            (metric == name).then_some(())?;
            let labels = labels
                .split("\",")
                .filter_map(|pair| {
                    let (key, value) = pair.split_once('=')?;
                    Some((key.to_owned(), value.trim_matches('"').to_owned()))
                })
                .collect();
            Some((labels, value.parse().ok()?))
        })
        .collect()
}

/// `/metrics` carries the process series under their conventional names, describing this
/// process, and one `scaleset_build_info` sample of 1 naming this build.
async fn metrics_carry_the_process_series_and_the_build_info(backend: Backend) {
    let app = App::start(
        backend,
        "metrics_carry_the_process_series_and_the_build_info",
    )
    .await;
    let metrics = app.raw("GET", "/metrics", None, None, "").await;
    assert_eq!(metrics.status, 200);
    let text = &metrics.text;
    let info = samples_named(text, "scaleset_build_info");
    assert_eq!(info.len(), 1, "one build_info sample:\n{text}");
    let (labels, value) = &info[0];
    assert_eq!(*value, 1.0);
    let label = |key: &str| {
        labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("build_info has no {key}: {labels:?}"))
    };
    assert_eq!(label("version"), env!("CARGO_PKG_VERSION"));
    assert!(!label("revision").is_empty());
    let rustc = label("rustc");
    assert!(
        rustc.split('.').count() >= 3 && rustc.starts_with(|c: char| c.is_ascii_digit()),
        "rustc is a version number: {rustc}"
    );
    if cfg!(target_os = "linux") {
        let one = |name: &str| {
            let found = samples_named(text, name);
            assert_eq!(found.len(), 1, "one {name} sample:\n{text}");
            found[0].1
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs_f64();
        let start = one("process_start_time_seconds");
        assert!(start <= now + 1.0 && start > now - 86_400.0, "{start}");
        assert!(one("process_cpu_seconds_total") >= 0.0);
        assert!(one("process_resident_memory_bytes") > 1_048_576.0);
        assert!(one("process_virtual_memory_bytes") >= one("process_resident_memory_bytes"));
        assert!(one("process_open_fds") >= 3.0);
        assert!(
            text.contains("# TYPE process_cpu_seconds counter"),
            "{text}"
        );
    }
}

backend_tests!(
    every_route_needs_a_valid_token,
    a_revoked_token_is_refused,
    probes_metrics_and_the_document_are_public,
    metrics_carry_the_process_series_and_the_build_info
);
