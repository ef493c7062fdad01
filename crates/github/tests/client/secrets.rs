//! Secrets never appear in `Debug` output or error text.

use scaleset_github::{ClientConfig, ConfigUrl, Credentials, MessageId, ScaleSetId, SecretString};

use crate::helpers::{API, PAT, REGISTRATION_TOKEN, harness, session_json};

#[tokio::test]
async fn secrets_are_absent_from_debug_output() {
    let key = include_str!("data/test-app-key.pem");
    let app = Credentials::app("Iv1.x", 1, key);
    let debug = format!("{app:?}");
    assert!(
        !debug.contains("PRIVATE KEY") && !debug.contains(&key[40..80]),
        "{debug}"
    );

    let mut h = harness().await;
    let client_debug = format!("{:?}", h.client);
    assert!(!client_debug.contains(PAT), "{client_debug}");
    let config = ClientConfig::new(
        ConfigUrl::parse("https://github.com/org").unwrap(),
        Credentials::pat(PAT),
    );
    assert!(!format!("{config:?}").contains(PAT));
    // secrecy's `SecretString`: redacted `Debug` and no `Display` at all, so a secret cannot be
    // formatted into a message by accident.
    assert_eq!(
        format!("{:?}", SecretString::from(PAT)),
        "SecretBox<str>([REDACTED])"
    );

    let queue = format!("{}/q", h.server.url());
    let session = h.open_session(&queue, "queue-token-secret").await;
    assert!(!format!("{session:?}").contains("queue-token-secret"));

    let jit = h
        .service_answer(
            "POST",
            "_apis/runtime/runnerscalesets/5/generatejitconfig",
            API,
            r#"{"runner":{"id":1},"encodedJITConfig":"jit-config-secret"}"#,
        )
        .await;
    let config = h
        .client
        .generate_jit_config(ScaleSetId(5), &scaleset_github::JitConfigRequest::new("r"))
        .await
        .unwrap();
    jit.assert_async().await;
    assert!(!format!("{config:?}").contains("jit-config-secret"));

    // Error text and Debug of an error from a call made with these secrets.
    let failing = h
        .service_mock("GET", "_apis/runtime/runnerscalesets/9", API)
        .with_status(400)
        .with_body(r#"{"typeName":"X.BadException, X","message":"no"}"#)
        .create_async()
        .await;
    let err = h.client.get_scale_set(ScaleSetId(9)).await.unwrap_err();
    failing.assert_async().await;
    for text in [format!("{err}"), format!("{err:?}")] {
        for secret in [PAT, REGISTRATION_TOKEN, h.admin_token.as_str()] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}

/// Collects everything a `fmt` subscriber writes.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn secrets_are_absent_from_trace_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // current-thread runtime: every poll happens on this thread, under this default.
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut h = harness().await;
    let queue = format!("{}/q", h.server.url());
    let mut session = h.open_session(&queue, "queue-token-1").await;
    let rejected = h
        .server
        .mock("GET", "/q")
        .with_status(401)
        .expect(1)
        .create_async()
        .await;
    let refresh = h
        .service_answer(
            "PATCH",
            &format!(
                "_apis/runtime/runnerscalesets/5/sessions/{}",
                session.session_id
            ),
            API,
            session_json(&queue, "queue-token-2"),
        )
        .await;
    let flaky = h
        .server
        .mock("GET", "/q")
        .match_header("authorization", "Bearer queue-token-2")
        .with_status(503)
        .expect(1)
        .create_async()
        .await;
    let accepted = h
        .server
        .mock("GET", "/q")
        .match_header("authorization", "Bearer queue-token-2")
        .with_status(202)
        .create_async()
        .await;
    assert!(
        h.client
            .get_message(&mut session, MessageId(0), 1)
            .await
            .unwrap()
            .is_none()
    );
    for mock in [rejected, refresh, flaky, accepted] {
        mock.assert_async().await;
    }

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("github.call"), "nothing was logged: {logs}");
    assert!(logs.contains("retrying"), "{logs}");
    for secret in [
        PAT,
        REGISTRATION_TOKEN,
        h.admin_token.as_str(),
        "queue-token-1",
        "queue-token-2",
    ] {
        assert!(!logs.contains(secret), "{secret} leaked into logs:\n{logs}");
    }
}

#[tokio::test]
async fn app_chain_secrets_are_absent_from_trace_logs_and_errors() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut server = mockito::Server::new_async().await;
    let jwt_seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = jwt_seen.clone();
    let install = server
        .mock("POST", "/api/v3/app/installations/7/access_tokens")
        .match_request(move |request| {
            let auth = request
                .header("authorization")
                .first()
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .trim_start_matches("Bearer ")
                .to_owned();
            *seen.lock().unwrap() = auth;
            true
        })
        .with_status(201)
        .with_body(r#"{"token":"ghs_installation_secret"}"#)
        .create_async()
        .await;
    let reg = server
        .mock(
            "POST",
            "/api/v3/orgs/org/actions/runners/registration-token",
        )
        .with_status(201)
        .with_body(r#"{"token":"registration_secret"}"#)
        .create_async()
        .await;
    // runner-registration keeps failing: retries are logged with their errors.
    let rr = server
        .mock("POST", "/api/v3/actions/runner-registration")
        .with_status(503)
        .with_body("service unavailable")
        .expect(2)
        .create_async()
        .await;
    let key = include_str!("data/test-app-key.pem");
    let url = ConfigUrl::parse(&format!("{}/org", server.url())).unwrap();
    let client = scaleset_github::Client::new(
        ClientConfig::new(url, Credentials::app("Iv1.app", 7, key))
            .with_sleeper(std::sync::Arc::new(
                crate::helpers::RecordingSleeper::default(),
            ))
            .with_retry(scaleset_github::RetryPolicy::new(
                2,
                std::time::Duration::from_millis(1),
                std::time::Duration::from_millis(1),
            )),
    )
    .unwrap();
    let err = client.service_url().await.unwrap_err();
    for mock in [install, reg, rr] {
        mock.assert_async().await;
    }

    let jwt = jwt_seen.lock().unwrap().clone();
    assert!(jwt.len() > 100, "the App JWT was sent: {jwt}");
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("retrying"), "{logs}");
    let texts = [
        logs,
        format!("{err}"),
        format!("{err:?}"),
        format!("{client:?}"),
    ];
    for text in &texts {
        for secret in [
            jwt.as_str(),
            "ghs_installation_secret",
            "registration_secret",
            &key[40..80],
        ] {
            assert!(!text.contains(secret), "{secret} leaked:\n{text}");
        }
    }
}
