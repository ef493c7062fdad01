//! Values the API refuses by the one rule the process later depends on, each a 400 that
//! writes nothing: a CA bundle the GitHub client could not trust (garbage inside PEM framing),
//! a token it could not send in a header (CR/LF), a host DNS cannot name, a worker name with a
//! control character. The same rules hold in the configuration file
//! (`crates/config/src/tests/door_values.rs`).

use serde_json::{Value, json};

use crate::helpers::{App, Backend, backend_tests};

backend_tests!(
    values_the_client_could_not_use_are_refused_and_nothing_is_written,
    a_real_ca_bundle_and_a_longest_dns_label_are_taken,
);

/// A real self-signed CA certificate (PEM).
fn ca_certificate() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params =
        rcgen::CertificateParams::new(vec!["ghes.example".to_owned()]).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&key).expect("certificate").pem()
}

fn credentials(token: &str, endpoint: Value) -> Value {
    json!({"name": "ghes", "auth": {"kind": "pat", "token": token}, "endpoint": endpoint})
}

async fn values_the_client_could_not_use_are_refused_and_nothing_is_written(backend: Backend) {
    let app = App::start(backend, "door_values_refused").await;
    let before = app.written().await;
    let garbage_ca = "-----BEGIN CERTIFICATE-----\nZZZZ\n-----END CERTIFICATE-----";
    let cases: Vec<(&str, String, Option<Value>, &str, &str)> = vec![
        (
            "POST",
            "/api/v1/credentials".into(),
            Some(credentials(
                "ghp_x",
                json!({"base_url": "https://ghes.example", "ca_bundle": garbage_ca}),
            )),
            "invalid_input",
            "endpoint.ca_bundle",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            Some(credentials(
                "ghp_a\r\nX-Evil: 1",
                json!({"base_url": "https://github.com"}),
            )),
            "invalid_input",
            "auth.token",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            Some(credentials(
                "ghp_x",
                json!({"base_url": format!("https://{}.example", "a".repeat(5000))}),
            )),
            "invalid_input",
            "base_url",
        ),
        (
            "POST",
            "/api/v1/credentials".into(),
            Some(credentials(
                "ghp_x",
                json!({"base_url": format!("https://{}.example", "a".repeat(64))}),
            )),
            "invalid_input",
            "base_url",
        ),
        (
            "POST",
            "/api/v1/workers/worker%1B%5B31m/drain".into(),
            None,
            "invalid_parameter",
            "control character",
        ),
    ];
    for (method, path, body, code, named) in cases {
        let answer = app.call(method, &path, body).await;
        let message = answer.error(400, code);
        assert!(message.contains(named), "{named} not in {message:?}");
        assert!(
            !message.contains("X-Evil"),
            "the token is quoted: {message:?}"
        );
        assert!(message.len() < 600, "{path}: {message:?}");
    }
    assert_eq!(app.written().await, before, "a refused request wrote");
}

async fn a_real_ca_bundle_and_a_longest_dns_label_are_taken(backend: Backend) {
    let app = App::start(backend, "door_values_taken").await;
    let created = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(credentials(
                "ghp_x",
                json!({
                    "base_url": format!("https://{}.example", "a".repeat(63)),
                    "ca_bundle": ca_certificate(),
                }),
            )),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
}
