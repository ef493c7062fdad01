//! Secrets never appear in `Debug` output or error text.

use std::time::Duration;

use mockito::Mock;
use scaleset_github::{
    ClientConfig, ConfigUrl, Credentials, GithubScaleSetId, MessageId, RetryPolicy, SecretString,
};

use crate::helpers::{
    API, APP_KEY, Harness, Issuing as _, PAT, REGISTRATION_TOKEN, client_at, harness,
    installation_token, runner_registration, session_json,
};

#[tokio::test]
async fn secrets_are_absent_from_debug_output() {
    let key = APP_KEY;
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

    let session = h.open_session_on("/q", "queue-token-secret").await;
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
        .generate_jit_config(
            GithubScaleSetId(5),
            &scaleset_github::JitConfigRequest::new("r"),
        )
        .await
        .unwrap();
    jit.assert_async().await;
    assert!(!format!("{config:?}").contains("jit-config-secret"));

    // Error text and Debug of an error from a call made with these secrets.
    let failing = h
        .service_error(
            "GET",
            "_apis/runtime/runnerscalesets/9",
            400,
            r#"{"typeName":"X.BadException, X","message":"no"}"#,
        )
        .await;
    let err = h
        .client
        .get_scale_set(GithubScaleSetId(9))
        .await
        .unwrap_err();
    failing.assert_async().await;
    for text in [format!("{err}"), format!("{err:?}")] {
        for secret in [PAT, REGISTRATION_TOKEN, h.admin_token.as_str()] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}

/// The poll of the queue `/q` carrying the refreshed queue token.
fn refreshed_poll(h: &mut Harness) -> Mock {
    h.server
        .mock("GET", "/q")
        .match_header("authorization", "Bearer queue-token-2")
}

#[tokio::test]
async fn secrets_are_absent_from_trace_logs() {
    let (captured, _guard) = scaleset_trace_capture::capture();

    let mut h = harness().await;
    let queue = format!("{}/q", h.server.url());
    let mut session = h.open_session(&queue, "queue-token-1").await;
    let rejected = h.server.mock("GET", "/q").with_status(401).expect(1);
    let rejected = rejected.create_async().await;
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
    let flaky = refreshed_poll(&mut h).with_status(503).expect(1);
    let flaky = flaky.create_async().await;
    let accepted = refreshed_poll(&mut h).with_status(202).create_async().await;
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

    let logs = captured.text();
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
    let (captured, _guard) = scaleset_trace_capture::capture();

    let mut server = mockito::Server::new_async().await;
    let jwt_seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = jwt_seen.clone();
    let install = installation_token(&mut server, 7)
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
        .issuing("ghs_installation_secret")
        .create_async()
        .await;
    let reg = server
        .mock(
            "POST",
            "/api/v3/orgs/org/actions/runners/registration-token",
        )
        .issuing("registration_secret")
        .create_async()
        .await;
    // runner-registration keeps failing: retries are logged with their errors.
    let rr = runner_registration(&mut server)
        .with_status(503)
        .with_body("service unavailable")
        .expect(2)
        .create_async()
        .await;
    let key = APP_KEY;
    let retry = RetryPolicy::new(2, Duration::from_millis(1), Duration::from_millis(1));
    let credentials = Credentials::app("Iv1.app", 7, key);
    let (client, _) = client_at(&server.url(), "org", credentials, |c| c.with_retry(retry));
    let err = client.service_url().await.unwrap_err();
    for mock in [install, reg, rr] {
        mock.assert_async().await;
    }

    let jwt = jwt_seen.lock().unwrap().clone();
    assert!(jwt.len() > 100, "the App JWT was sent: {jwt}");
    let logs = captured.text();
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
