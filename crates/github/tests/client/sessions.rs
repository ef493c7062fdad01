//! Refresh-once-on-401 for the queue calls (GET message, DELETE message, acquirejobs).

use mockito::Matcher;
use scaleset_github::ExposeSecret as _;
use scaleset_github::{
    Error, ErrorClass, GithubScaleSetId, MessageId, Refusal, RunnerRequestId, Session,
};

use crate::helpers::{API, Harness, assert_hit, harness, session_json};

const SESSION: &str = "8e1f2b4c-0000-4000-8000-000000000001";

/// The session create (POST), answering `body`.
async fn create(h: &mut Harness, body: impl AsRef<[u8]>) -> mockito::Mock {
    h.service_mock("POST", "_apis/runtime/runnerscalesets/5/sessions", API)
        .with_body(body)
        .create_async()
        .await
}

/// The session delete (DELETE), expected once, answering `status`.
async fn close(h: &mut Harness, status: usize) -> mockito::Mock {
    h.service_mock(
        "DELETE",
        &format!("_apis/runtime/runnerscalesets/5/sessions/{SESSION}"),
        API,
    )
    .with_status(status)
    .expect(1)
    .create_async()
    .await
}

async fn open(h: &mut Harness, queue_path: &str) -> Session {
    h.open_session_on(queue_path, "queue-1").await
}

/// A queue call `method path` answered `status`, expected `times` times; with `token`, only
/// when it carries that queue token.
async fn queue_call(
    h: &mut Harness,
    method: &str,
    path: &str,
    token: Option<&str>,
    status: usize,
    times: usize,
) -> mockito::Mock {
    let mut mock = h.server.mock(method, path);
    if let Some(token) = token {
        mock = mock.match_header("authorization", format!("Bearer {token}").as_str());
    }
    mock.with_status(status).expect(times).create_async().await
}

/// The session refresh (PATCH), expected once, answering a session on `queue` (a path on the
/// server) with the queue token `token`.
async fn refresh(h: &mut Harness, queue: &str, token: &str) -> mockito::Mock {
    let queue = format!("{}{queue}", h.server.url());
    h.service_mock(
        "PATCH",
        &format!("_apis/runtime/runnerscalesets/5/sessions/{SESSION}"),
        API,
    )
    .with_body(session_json(&queue, token))
    .expect(1)
    .create_async()
    .await
}

/// A session opened on the queue at `before` whose queue call `method {queue}{suffix}` answers
/// 401 to the first queue token; the refresh moves it to `after` with the token `queue-2`,
/// where the same call answers `status`. Returns the session and the rejected, refresh and
/// accepted mocks.
async fn refreshing(
    h: &mut Harness,
    before: &str,
    after: &str,
    method: &str,
    suffix: &str,
    status: usize,
) -> (Session, [mockito::Mock; 3]) {
    let session = open(h, before).await;
    let rejected = queue_call(
        h,
        method,
        &format!("{before}{suffix}"),
        Some("queue-1"),
        401,
        1,
    )
    .await;
    let refresh = refresh(h, after, "queue-2").await;
    let accepted = queue_call(
        h,
        method,
        &format!("{after}{suffix}"),
        Some("queue-2"),
        status,
        1,
    )
    .await;
    (session, [rejected, refresh, accepted])
}

#[tokio::test]
async fn a_401_on_get_message_refreshes_the_session_once_and_retries() {
    let mut h = harness().await;
    let (mut session, mocks) = refreshing(&mut h, "/q1", "/q2", "GET", "", 202).await;
    let message = h.client.get_message(&mut session, MessageId(0), 1).await;
    assert!(message.unwrap().is_none());
    assert_eq!(
        session.message_queue_access_token.expose_secret(),
        "queue-2"
    );
    assert_eq!(session.message_queue_url, format!("{}/q2", h.server.url()));
    assert_hit(&mocks).await;
}

#[tokio::test]
async fn a_second_401_is_returned() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q").await;
    let rejected = queue_call(&mut h, "GET", "/q", None, 401, 2).await;
    let refresh = refresh(&mut h, "/q", "queue-2").await;
    let err = h.failed_poll(&mut session).await;
    assert!(err.is_queue_token_expired());
    assert_eq!(err.class(), ErrorClass::Refusal(Refusal::QueueTokenExpired));
    assert_hit([&rejected, &refresh]).await;
}

#[tokio::test]
async fn a_401_on_delete_message_refreshes_the_session() {
    let mut h = harness().await;
    let (mut session, mocks) = refreshing(&mut h, "/q", "/q", "DELETE", "/3", 204).await;
    h.client
        .delete_message(&mut session, MessageId(3))
        .await
        .unwrap();
    assert_hit(&mocks).await;
}

/// The `acquirejobs` call of scale set 5, carrying the queue token `token`.
fn acquire(h: &mut Harness, token: &str) -> mockito::Mock {
    h.service_mock_as(
        "POST",
        "_apis/runtime/runnerscalesets/5/acquirejobs",
        API,
        token,
    )
}

#[tokio::test]
async fn a_401_on_acquire_jobs_refreshes_the_session() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q").await;
    let rejected = acquire(&mut h, "queue-1")
        .with_status(401)
        .expect(1)
        .create_async()
        .await;
    let refresh = refresh(&mut h, "/q", "queue-2").await;
    let accepted = acquire(&mut h, "queue-2")
        .match_body(Matcher::Exact("[7]".into()))
        .with_body(r#"{"count":1,"value":[7]}"#)
        .expect(1)
        .create_async()
        .await;
    let acquired = h
        .client
        .acquire_jobs(&mut session, &[RunnerRequestId(7)])
        .await;
    assert_eq!(acquired.unwrap(), vec![RunnerRequestId(7)]);
    assert_hit([&rejected, &refresh, &accepted]).await;
}

#[tokio::test]
async fn a_failed_refresh_is_returned_with_its_own_error() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q").await;
    let rejected = queue_call(&mut h, "GET", "/q", None, 401, 1).await;
    let evicted = h
        .service_error(
            "PATCH",
            &format!("_apis/runtime/runnerscalesets/5/sessions/{SESSION}"),
            404,
            r#"{"typeName":"X.RunnerAdminException, X","message":"session ID that doesn't exist"}"#,
        )
        .await;
    let err = h.failed_poll(&mut session).await;
    assert!(err.is_session_expired_or_unknown(), "{err}");
    assert_hit([&rejected, &evicted]).await;
}

// A created session is never lost: a 2xx create whose session cannot be used is deleted by its
// id before the error returns, or the error names it so the caller can delete it.

const UNUSABLE_SESSIONS: &[(&str, &str, &str)] = &[
    ("no queue url", "", "messageQueueUrl"),
    (
        "a queue url that is not a url",
        "not a url",
        "messageQueueUrl",
    ),
    ("no queue token", "QUEUE", "messageQueueAccessToken"),
];

/// A session create answering `body`, then the delete of its session answering
/// `delete_status`: returns the create's error and both mocks.
async fn unusable_create(
    h: &mut Harness,
    body: impl AsRef<[u8]>,
    delete_status: usize,
) -> (Error, [mockito::Mock; 2]) {
    let create = create(h, body).await;
    let delete = close(h, delete_status).await;
    (h.failed_create_session(5).await, [create, delete])
}

#[tokio::test]
async fn an_unusable_created_session_is_deleted_before_the_error_returns() {
    for (case, queue_url, named) in UNUSABLE_SESSIONS {
        let mut h = harness().await;
        let queue_url = queue_url.replace("QUEUE", &format!("{}/q", h.server.url()));
        let token = if *named == "messageQueueAccessToken" {
            ""
        } else {
            "t"
        };
        let (err, mocks) = unusable_create(&mut h, session_json(&queue_url, token), 204).await;
        assert!(
            matches!(err, Error::UnexpectedResponse { status: 200, .. }),
            "{case}: {err}"
        );
        assert!(err.to_string().contains(named), "{case}: {err}");
        assert_eq!(err.class(), ErrorClass::Retryable, "{case}");
        assert_eq!(err.open_session(), None, "{case}");
        assert_hit(&mocks).await;
    }
}

#[tokio::test]
async fn an_unusable_session_that_cannot_be_deleted_is_named_in_the_error() {
    let mut h = harness().await;
    let (err, mocks) = unusable_create(&mut h, session_json("", "t"), 403).await;
    assert_eq!(
        err.open_session(),
        Some((GithubScaleSetId(5), SESSION)),
        "{err}"
    );
    assert!(
        matches!(&err, Error::UnusableSessionLeftOpen { status: 200, reason, .. }
            if reason.contains("messageQueueUrl")),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(SESSION) && text.contains("delete_session"),
        "{text}"
    );
    let cleanup = std::error::Error::source(&err).expect("the delete failure is the source");
    assert!(cleanup.to_string().contains("403"), "{cleanup}");
    assert_eq!(err.status(), Some(200));
    assert_eq!(
        err.endpoint(),
        Some(scaleset_github::Endpoint::CreateSession)
    );
    assert_eq!(err.class(), ErrorClass::Retryable);
    assert_hit(&mocks).await;
}

#[tokio::test]
async fn an_unusable_session_already_gone_on_delete_is_not_left_open() {
    let mut h = harness().await;
    let (err, mocks) = unusable_create(&mut h, session_json("", "t"), 404).await;
    assert!(matches!(err, Error::UnexpectedResponse { .. }), "{err}");
    assert_eq!(err.open_session(), None);
    assert_hit(&mocks).await;
}

#[tokio::test]
async fn an_unusable_session_without_an_id_has_nothing_to_delete() {
    let mut h = harness().await;
    let _create = create(
        &mut h,
        r#"{"sessionId":"","messageQueueUrl":"","messageQueueAccessToken":"t"}"#,
    )
    .await;
    let delete = h
        .server
        .mock("DELETE", mockito::Matcher::Any)
        .expect(0)
        .create_async()
        .await;
    let err = h.failed_create_session(5).await;
    assert!(matches!(err, Error::UnexpectedResponse { .. }), "{err}");
    delete.assert_async().await;
}
