//! Retry policy over the wire: 5xx/429 retried with 1-2-4-8 s waits (recorded, not slept),
//! `Retry-After`, exhaustion, 501 and other 4xx not retried, transport errors and timeouts
//! retried, runner-registration retried on 401/403.

use std::sync::Arc;
use std::time::Duration;

use scaleset_github::{
    Client, ClientConfig, Credentials, Endpoint, Error, ErrorClass, GithubScaleSetId, MessageId,
    RetryPolicy, Session, Timeouts,
};

use crate::helpers::{
    API, APP_KEY, Harness, Issuing as _, ORG, PAT, RecordingSleeper, admin_jwt, assert_hit,
    client_at, harness, installation_token, issued_admin_token, issued_registration_token,
    pat_client, pat_client_with, refused_registration_token, refused_runner_registration,
    registration_answer, registration_token, runner_registration, session_json, silent_server,
};

/// The GET of scale set 5 answered `status` (with `header`, if any), expected `hits` times.
async fn get_scale_set_5(
    h: &mut Harness,
    status: usize,
    header: Option<(&str, &str)>,
    hits: usize,
) -> mockito::Mock {
    let mut mock = h.service_mock("GET", "_apis/runtime/runnerscalesets/5", API);
    if let Some((name, value)) = header {
        mock = mock.with_header(name, value);
    }
    mock.with_status(status).expect(hits).create_async().await
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let mut h = harness().await;
    let failing = get_scale_set_5(&mut h, 503, None, 2).await;
    let ok = h
        .service_mock("GET", "_apis/runtime/runnerscalesets/5", API)
        .with_body(r#"{"id":5}"#)
        .expect(1)
        .create_async()
        .await;
    assert_eq!(
        h.client
            .get_scale_set(GithubScaleSetId(5))
            .await
            .unwrap()
            .id,
        GithubScaleSetId(5)
    );
    failing.assert_async().await;
    ok.assert_async().await;
    assert_eq!(
        h.sleeper.waits(),
        vec![Duration::from_secs(1), Duration::from_secs(2)]
    );
}

#[tokio::test]
async fn retries_are_exhausted_after_five_attempts() {
    let mut h = harness().await;
    let body = r#"{"typeName":"X.InternalException, X","message":"boom"}"#;
    let failing = h
        .service_failing("POST", "_apis/runtime/runnerscalesets", 500, body, 5)
        .await;
    let err = h.failed_create_scale_set().await;
    assert!(
        matches!(err.unshared(), Error::RetriesExhausted { attempts: 5, .. }),
        "{err}"
    );
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.exception_name(), Some("InternalException"));
    assert!(
        err.to_string().contains("giving up after 5 attempt(s)"),
        "{err}"
    );
    failing.assert_async().await;
    let secs: Vec<u64> = h.sleeper.waits().iter().map(Duration::as_secs).collect();
    assert_eq!(secs, vec![1, 2, 4, 8]);
}

#[tokio::test]
async fn retry_after_seconds_and_dates_are_honoured() {
    let mut h = harness().await;
    let limited = get_scale_set_5(&mut h, 429, Some(("Retry-After", "7")), 1).await;
    let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
    let unavailable = get_scale_set_5(&mut h, 503, Some(("Retry-After", &date)), 1).await;
    let ok = h
        .service_answer("GET", "_apis/runtime/runnerscalesets/5", API, r#"{"id":5}"#)
        .await;
    h.client.get_scale_set(GithubScaleSetId(5)).await.unwrap();
    limited.assert_async().await;
    unavailable.assert_async().await;
    ok.assert_async().await;
    let waits = h.sleeper.waits();
    assert_eq!(waits.len(), 2);
    assert_eq!(waits[0], Duration::from_secs(7));
    assert!(
        (Duration::from_secs(100)..=Duration::from_secs(120)).contains(&waits[1]),
        "{waits:?}"
    );
}

#[tokio::test]
async fn other_4xx_and_501_are_not_retried() {
    let mut h = harness().await;
    for (id, status) in [
        (1, 400),
        (2, 401),
        (3, 403),
        (4, 404),
        (5, 409),
        (6, 422),
        (7, 501),
    ] {
        let mock = h
            .service_mock("GET", &format!("_apis/runtime/runnerscalesets/{id}"), API)
            .with_status(status)
            .expect(1)
            .create_async()
            .await;
        let err = h
            .client
            .get_scale_set(GithubScaleSetId(id))
            .await
            .unwrap_err();
        assert!(
            matches!(err.unshared(), Error::Service(_)),
            "{status}: {err}"
        );
        assert_eq!(err.status(), Some(status as u16));
        mock.assert_async().await;
    }
    assert!(h.sleeper.waits().is_empty());
}

#[tokio::test]
async fn registration_token_401_is_not_retried() {
    let mut server = mockito::Server::new_async().await;
    let reg = refused_registration_token(&mut server).await;
    let (client, sleeper) = pat_client(&server);
    let err = client.get_scale_set(GithubScaleSetId(1)).await.unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert_eq!(
        err.endpoint(),
        Some(scaleset_github::Endpoint::RegistrationToken)
    );
    reg.assert_async().await;
    assert!(sleeper.waits().is_empty());
}

#[tokio::test]
async fn runner_registration_retries_401_and_403() {
    let mut server = mockito::Server::new_async().await;
    let (client, sleeper, reg) = registration_client(&mut server).await;
    let unauthorized = refused_runner_registration(&mut server, 401, 1).await;
    let forbidden = refused_runner_registration(&mut server, 403, 1).await;
    let service = format!("{}/rest", server.url());
    let ok = runner_registration(&mut server)
        .with_status(200)
        .with_body(registration_answer(&service, &admin_jwt("a", 3600)))
        .expect(1)
        .create_async()
        .await;
    assert_eq!(client.service_url().await.unwrap().as_str(), service);
    assert_hit([&reg, &unauthorized, &forbidden, &ok]).await;
    assert_eq!(
        sleeper.waits(),
        vec![Duration::from_secs(1), Duration::from_secs(2)]
    );
}

/// A registration-token mock (201, expected once) and a client for the org with a recording
/// sleeper.
async fn registration_client(
    server: &mut mockito::ServerGuard,
) -> (Client, Arc<RecordingSleeper>, mockito::Mock) {
    registration_client_with(server, |config| config).await
}

/// [`registration_client`] with the client's configuration passed through `adjust`.
async fn registration_client_with(
    server: &mut mockito::ServerGuard,
    adjust: impl FnOnce(ClientConfig) -> ClientConfig,
) -> (Client, Arc<RecordingSleeper>, mockito::Mock) {
    let reg = issued_registration_token(server, 1).await;
    let (client, sleeper) = pat_client_with(server, adjust);
    (client, sleeper, reg)
}

#[tokio::test]
async fn runner_registration_401s_use_the_normal_retry_budget() {
    let mut server = mockito::Server::new_async().await;
    let (client, sleeper, reg) = registration_client(&mut server).await;
    let unauthorized = runner_registration(&mut server)
        .with_status(401)
        .with_body(r#"{"message":"Bad credentials"}"#)
        .expect(5)
        .create_async()
        .await;
    let err = client.service_url().await.unwrap_err();
    assert!(
        matches!(err.unshared(), Error::RetriesExhausted { attempts: 5, .. }),
        "{err:?}"
    );
    assert_eq!(err.status(), Some(401));
    assert_eq!(err.endpoint(), Some(Endpoint::RunnerRegistration));
    assert_hit([&reg, &unauthorized]).await;
    let secs: Vec<u64> = sleeper.waits().iter().map(Duration::as_secs).collect();
    assert_eq!(secs, vec![1, 2, 4, 8]);
}

/// The client's backoff is jittered by its random source: a draw of 0 waits half of each
/// backoff, a draw of 0.5 three quarters (ten thousand clients after an outage spread out).
#[tokio::test]
async fn the_backoff_is_jittered_by_the_random_source() {
    for (draw, expected) in [
        (0.0, [500, 1000, 2000, 4000]),
        (0.5, [750, 1500, 3000, 6000]),
    ] {
        let mut server = mockito::Server::new_async().await;
        let (client, sleeper, _reg) = registration_client_with(&mut server, |config| {
            config.with_random_source(Arc::new(move || draw))
        })
        .await;
        let _unauthorized = runner_registration(&mut server)
            .with_status(401)
            .with_body(r#"{"message":"Bad credentials"}"#)
            .expect(5)
            .create_async()
            .await;
        client.service_url().await.unwrap_err();
        let millis: Vec<u128> = sleeper.waits().iter().map(Duration::as_millis).collect();
        assert_eq!(millis, expected, "draw {draw}");
    }
}

#[tokio::test]
async fn runner_registration_other_4xx_are_not_retried() {
    for status in [400, 404, 422] {
        let mut server = mockito::Server::new_async().await;
        let (client, sleeper, reg) = registration_client(&mut server).await;
        let refused = refused_runner_registration(&mut server, status, 1).await;
        let err = client.service_url().await.unwrap_err();
        assert!(
            matches!(err.unshared(), Error::Service(_)),
            "{status}: {err:?}"
        );
        assert_eq!(err.status(), Some(status as u16));
        assert_eq!(err.class(), ErrorClass::Fatal, "{status}");
        assert_hit([&reg, &refused]).await;
        assert!(sleeper.waits().is_empty(), "{status}");
    }
}

#[tokio::test]
async fn a_single_attempt_runner_registration_401_is_still_retryable() {
    let mut server = mockito::Server::new_async().await;
    let (client, _, reg) = registration_client_with(&mut server, |config| {
        config.with_retry(RetryPolicy::never())
    })
    .await;
    let unauthorized = refused_runner_registration(&mut server, 401, 1).await;
    let err = client.service_url().await.unwrap_err();
    assert!(matches!(err.unshared(), Error::Service(_)), "{err:?}");
    assert_eq!(err.status(), Some(401));
    assert_eq!(err.class(), ErrorClass::Retryable);
    assert_hit([&reg, &unauthorized]).await;
}

#[tokio::test]
async fn runner_registration_without_token_or_url_is_an_error() {
    let mut server = mockito::Server::new_async().await;
    let (client, _, _reg) = registration_client(&mut server).await;
    let rr = runner_registration(&mut server)
        .with_status(201)
        .with_body(r#"{"url":"","token":"t"}"#)
        .create_async()
        .await;
    let err = client.service_url().await.unwrap_err();
    assert!(err.to_string().contains("no actions service url"), "{err}");
    rr.assert_async().await;
}

/// A PAT client for the organization at `base` (a server that answers nothing), with its
/// recording sleeper.
fn silent_client(
    base: &str,
    adjust: impl FnOnce(ClientConfig) -> ClientConfig,
) -> (Client, Arc<RecordingSleeper>) {
    client_at(base, ORG, Credentials::pat(PAT), adjust)
}

/// [`silent_client`] with the retry policy `retry` and request and long-poll timeouts (ms).
fn timing_out_client(base: &str, retry: RetryPolicy, request_ms: u64, long_poll_ms: u64) -> Client {
    let timeouts = Timeouts::new(
        Duration::from_millis(request_ms),
        Duration::from_millis(long_poll_ms),
    );
    silent_client(base, |config| {
        config.with_retry(retry).with_timeouts(timeouts)
    })
    .0
}

#[tokio::test]
async fn transport_errors_are_retried_and_exhausted() {
    // A port that was just free: connections are refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let (client, sleeper) = silent_client(&format!("http://127.0.0.1:{port}"), |config| config);
    let err = client.get_scale_set(GithubScaleSetId(1)).await.unwrap_err();
    let Error::RetriesExhausted { attempts, last, .. } = err.unshared() else {
        panic!("{err:?}")
    };
    assert_eq!(*attempts, 5);
    assert!(matches!(**last, Error::Transport { .. }), "{last:?}");
    assert_eq!(sleeper.waits().len(), 4);
    assert_eq!(err.class(), scaleset_github::ErrorClass::Retryable);
}

#[tokio::test]
async fn per_request_timeouts_apply_and_are_retried() {
    let (base, server) = silent_server().await;
    let retry = RetryPolicy::new(2, Duration::from_millis(1), Duration::from_millis(1));
    let client = timing_out_client(&base, retry, 50, 50);
    let err = client.get_scale_set(GithubScaleSetId(1)).await.unwrap_err();
    let Error::RetriesExhausted {
        attempts: 2, last, ..
    } = err.unshared()
    else {
        panic!("{err:?}")
    };
    assert!(
        matches!(**last, Error::Timeout { timeout, .. } if timeout == Duration::from_millis(50)),
        "{last:?}"
    );
    assert!(err.is_timeout(), "predicates see through the exhaustion");
    assert!(!err.is_transport());
    assert_eq!(err.class(), ErrorClass::Retryable);
    server.abort();
}

#[tokio::test]
async fn a_single_attempt_policy_returns_the_timeout_itself() {
    let (base, server) = silent_server().await;
    let client = timing_out_client(&base, RetryPolicy::never(), 50, 50);
    let err = client.get_scale_set(GithubScaleSetId(1)).await.unwrap_err();
    assert!(
        matches!(err.unshared(), Error::Timeout { timeout, host, .. }
            if *timeout == Duration::from_millis(50) && host == "127.0.0.1"),
        "{err:?}"
    );
    assert!(err.is_timeout());
    assert_eq!(err.class(), ErrorClass::Retryable);
    assert_eq!(err.endpoint(), Some(Endpoint::RegistrationToken));
    let text = err.to_string();
    assert!(
        text.contains("registration_token: no response within 50ms from 127.0.0.1")
            && text.contains("with_timeouts")
            && !text.contains("giving up"),
        "{text}"
    );
    server.abort();
}

#[tokio::test]
async fn a_single_attempt_policy_returns_the_service_error_itself() {
    let mut h = harness().await;
    let (client, sleeper) =
        pat_client_with(&h.server, |config| config.with_retry(RetryPolicy::never()));
    let body = r#"{"typeName":"X.ServiceUnavailableException, X","message":"down"}"#;
    let failing = h
        .service_error("GET", "_apis/runtime/runnerscalesets/5", 503, body)
        .await;
    let err = client.get_scale_set(GithubScaleSetId(5)).await.unwrap_err();
    assert!(matches!(err.unshared(), Error::Service(_)), "{err:?}");
    assert_eq!(err.status(), Some(503));
    assert_eq!(err.exception_name(), Some("ServiceUnavailableException"));
    assert_eq!(err.class(), ErrorClass::Retryable);
    assert!(!err.to_string().contains("giving up"), "{err}");
    failing.assert_async().await;
    assert!(sleeper.waits().is_empty());
}

#[tokio::test]
async fn the_long_poll_uses_its_own_timeout() {
    let (base, server) = silent_server().await;
    let client = timing_out_client(&base, RetryPolicy::never(), 300, 40);
    let mut session: Session =
        serde_json::from_str(&session_json(&format!("{base}/scalesets/message"), "q")).unwrap();
    let poll = client
        .get_message(&mut session, MessageId(0), 1)
        .await
        .unwrap_err();
    assert!(
        matches!(poll, Error::Timeout { timeout, .. } if timeout == Duration::from_millis(40)),
        "{poll:?}"
    );
    let ack = client
        .delete_message(&mut session, MessageId(1))
        .await
        .unwrap_err();
    assert!(
        matches!(ack, Error::Timeout { timeout, .. } if timeout == Duration::from_millis(300)),
        "{ack:?}"
    );
    server.abort();
}

#[test]
fn the_default_long_poll_timeout_exceeds_the_servers_hold() {
    // The service holds a poll for about 50 s (51 s measured) before answering 202.
    let defaults = Timeouts::default();
    assert!(
        defaults.long_poll >= Duration::from_secs(2 * 51),
        "{defaults:?}"
    );
    assert_eq!(defaults.long_poll, Duration::from_secs(300));
}

// REST rate limits on the token chain: a 403 or 429 that advertises a wait (`Retry-After`, or
// `x-ratelimit-remaining: 0` with `x-ratelimit-reset`) is waited out and retried.

/// [`issued_admin_token`] for the service at `{server}/rest`, expected once; returns the
/// service URL too.
async fn issued_rest_admin_token(server: &mut mockito::ServerGuard) -> (mockito::Mock, String) {
    let service = format!("{}/rest", server.url());
    let mock = issued_admin_token(server, &service, &admin_jwt("a", 3600), 1).await;
    (mock, service)
}

/// The rate-limit headers of an answer with `remaining` calls left and a reset `reset_in`
/// seconds from now.
fn rate_limit(remaining: &str, reset_in: u64) -> [(&'static str, String); 2] {
    [
        ("x-ratelimit-remaining", remaining.to_owned()),
        ("x-ratelimit-reset", epoch_secs_from_now(reset_in)),
    ]
}

fn epoch_secs_from_now(secs: u64) -> String {
    (std::time::SystemTime::now() + Duration::from_secs(secs))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string()
}

/// The PAT chain where the registration-token call first answers `status` with `headers`,
/// then 201. Returns the recorded waits and how the chain ended.
async fn rate_limited_registration(
    status: usize,
    headers: &[(&str, String)],
    retry: RetryPolicy,
) -> (Vec<Duration>, Result<url::Url, Error>) {
    let mut server = mockito::Server::new_async().await;
    let mut limited = registration_token(&mut server)
        .with_status(status)
        .with_body(r#"{"message":"API rate limit exceeded"}"#)
        .expect(1);
    for (name, value) in headers {
        limited = limited.with_header(*name, value);
    }
    let limited = limited.create_async().await;
    let _ok = registration_token(&mut server)
        .issuing("reg")
        .create_async()
        .await;
    let _registration = issued_rest_admin_token(&mut server).await;
    let (client, sleeper) = pat_client_with(&server, |config| config.with_retry(retry));
    let result = client.service_url().await;
    limited.assert_async().await;
    (sleeper.waits(), result)
}

#[tokio::test]
async fn a_rate_limited_registration_token_waits_the_advertised_retry_after() {
    for status in [403, 429] {
        let (waits, result) = rate_limited_registration(
            status,
            &[("Retry-After", "17".to_owned())],
            RetryPolicy::default(),
        )
        .await;
        assert!(result.is_ok(), "{status}: {result:?}");
        assert_eq!(waits, vec![Duration::from_secs(17)], "{status}");
    }
}

#[tokio::test]
async fn a_spent_rate_limit_waits_until_its_reset() {
    let headers = rate_limit("0", 40);
    let (waits, result) = rate_limited_registration(403, &headers, RetryPolicy::default()).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(waits.len(), 1);
    // The reset is whole seconds since the epoch, read a moment after it was written.
    assert!(
        (Duration::from_secs(38)..=Duration::from_secs(40)).contains(&waits[0]),
        "{waits:?}"
    );
}

#[tokio::test]
async fn an_advertised_wait_is_bounded_by_the_retry_after_cap() {
    let policy = RetryPolicy::default().with_max_retry_after(Duration::from_secs(90));
    let headers = rate_limit("0", 3600);
    let (waits, result) = rate_limited_registration(429, &headers, policy.clone()).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(waits, vec![Duration::from_secs(90)]);
    let (waits, _) =
        rate_limited_registration(403, &[("Retry-After", "600".to_owned())], policy).await;
    assert_eq!(waits, vec![Duration::from_secs(90)]);
}

#[tokio::test]
async fn a_403_that_advertises_no_wait_stays_fatal() {
    let headers = rate_limit("4999", 40);
    let (waits, result) = rate_limited_registration(403, &headers, RetryPolicy::default()).await;
    let err = result.unwrap_err();
    assert!(waits.is_empty(), "{waits:?}");
    assert_eq!(err.status(), Some(403));
    assert_eq!(err.service_error().unwrap().rate_limit_wait, None);
    assert_eq!(err.class(), ErrorClass::Fatal);
}

#[tokio::test]
async fn a_rate_limit_answer_is_retryable_even_without_retries() {
    let (waits, result) = rate_limited_registration(
        403,
        &[("Retry-After", "17".to_owned())],
        RetryPolicy::never(),
    )
    .await;
    let err = result.unwrap_err();
    assert!(waits.is_empty());
    assert_eq!(
        err.service_error().unwrap().rate_limit_wait,
        Some(Duration::from_secs(17))
    );
    assert_eq!(err.class(), ErrorClass::Retryable);
}

#[tokio::test]
async fn rate_limited_installation_token_and_runner_registration_wait_too() {
    let mut server = mockito::Server::new_async().await;
    let limited_installation = installation_token(&mut server, 4242)
        .with_status(403)
        .with_header("x-ratelimit-remaining", "0")
        .with_header("x-ratelimit-reset", "1")
        .expect(1)
        .create_async()
        .await;
    let _installation = installation_token(&mut server, 4242)
        .issuing("ghs_installation")
        .create_async()
        .await;
    let _reg = issued_registration_token(&mut server, 1).await;
    let limited_registration = runner_registration(&mut server)
        .with_status(429)
        .with_header("Retry-After", "23")
        .expect(1)
        .create_async()
        .await;
    let (_registration, service) = issued_rest_admin_token(&mut server).await;
    let credentials = Credentials::app("Iv1.client", 4242, APP_KEY);
    let (client, sleeper) = client_at(&server.url(), ORG, credentials, |config| config);
    assert_eq!(client.service_url().await.unwrap().as_str(), service);
    assert_hit([&limited_installation, &limited_registration]).await;
    // A reset long past means retry at once; runner-registration's Retry-After is exact.
    assert_eq!(
        sleeper.waits(),
        vec![Duration::ZERO, Duration::from_secs(23)]
    );
}

#[tokio::test]
async fn a_rate_limit_header_off_the_token_chain_changes_nothing() {
    let mut h = harness().await;
    let forbidden = get_scale_set_5(&mut h, 403, Some(("Retry-After", "17")), 1).await;
    let err = h
        .client
        .get_scale_set(GithubScaleSetId(5))
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Fatal);
    assert!(h.sleeper.waits().is_empty());
    forbidden.assert_async().await;
}
