//! Refresh-once-on-401 for the queue calls (GET message, DELETE message, acquirejobs).

use mockito::Matcher;
use scaleset_github::ExposeSecret as _;
use scaleset_github::{
    Error, ErrorClass, MessageId, Refusal, RunnerRequestId, ScaleSetId, Session,
};

use crate::helpers::{API, Harness, harness, session_json};

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
    let queue = format!("{}{queue_path}", h.server.url());
    h.open_session(&queue, "queue-1").await
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

/// The session refresh (PATCH), expected once, answering a session on `queue` with the queue
/// token `token`.
async fn refresh(h: &mut Harness, queue: &str, token: &str) -> mockito::Mock {
    h.service_mock(
        "PATCH",
        &format!("_apis/runtime/runnerscalesets/5/sessions/{SESSION}"),
        API,
    )
    .with_body(session_json(queue, token))
    .expect(1)
    .create_async()
    .await
}

#[tokio::test]
async fn a_401_on_get_message_refreshes_the_session_once_and_retries() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q1").await;
    let new_queue = format!("{}/q2", h.server.url());
    let rejected = queue_call(&mut h, "GET", "/q1", Some("queue-1"), 401, 1).await;
    let refresh = refresh(&mut h, &new_queue, "queue-2").await;
    let accepted = queue_call(&mut h, "GET", "/q2", Some("queue-2"), 202, 1).await;
    assert!(
        h.client
            .get_message(&mut session, MessageId(0), 1)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        session.message_queue_access_token.expose_secret(),
        "queue-2"
    );
    assert_eq!(session.message_queue_url, new_queue);
    rejected.assert_async().await;
    refresh.assert_async().await;
    accepted.assert_async().await;
}

#[tokio::test]
async fn a_second_401_is_returned() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q").await;
    let queue = format!("{}/q", h.server.url());
    let rejected = queue_call(&mut h, "GET", "/q", None, 401, 2).await;
    let refresh = refresh(&mut h, &queue, "queue-2").await;
    let err = h
        .client
        .get_message(&mut session, MessageId(0), 1)
        .await
        .unwrap_err();
    assert!(err.is_queue_token_expired());
    assert_eq!(err.class(), ErrorClass::Refusal(Refusal::QueueTokenExpired));
    rejected.assert_async().await;
    refresh.assert_async().await;
}

#[tokio::test]
async fn a_401_on_delete_message_refreshes_the_session() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q").await;
    let queue = format!("{}/q", h.server.url());
    let rejected = queue_call(&mut h, "DELETE", "/q/3", Some("queue-1"), 401, 1).await;
    let refresh = refresh(&mut h, &queue, "queue-2").await;
    let accepted = queue_call(&mut h, "DELETE", "/q/3", Some("queue-2"), 204, 1).await;
    h.client
        .delete_message(&mut session, MessageId(3))
        .await
        .unwrap();
    rejected.assert_async().await;
    refresh.assert_async().await;
    accepted.assert_async().await;
}

#[tokio::test]
async fn a_401_on_acquire_jobs_refreshes_the_session() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q").await;
    let queue = format!("{}/q", h.server.url());
    let rejected = h
        .server
        .mock(
            "POST",
            "/tenant/123/_apis/runtime/runnerscalesets/5/acquirejobs",
        )
        .match_query(Matcher::Exact(API.into()))
        .match_header("authorization", "Bearer queue-1")
        .with_status(401)
        .expect(1)
        .create_async()
        .await;
    let refresh = refresh(&mut h, &queue, "queue-2").await;
    let accepted = h
        .server
        .mock(
            "POST",
            "/tenant/123/_apis/runtime/runnerscalesets/5/acquirejobs",
        )
        .match_query(Matcher::Exact(API.into()))
        .match_header("authorization", "Bearer queue-2")
        .match_body(Matcher::Exact("[7]".into()))
        .with_body(r#"{"count":1,"value":[7]}"#)
        .expect(1)
        .create_async()
        .await;
    assert_eq!(
        h.client
            .acquire_jobs(&mut session, &[RunnerRequestId(7)])
            .await
            .unwrap(),
        vec![RunnerRequestId(7)]
    );
    rejected.assert_async().await;
    refresh.assert_async().await;
    accepted.assert_async().await;
}

#[tokio::test]
async fn a_failed_refresh_is_returned_with_its_own_error() {
    let mut h = harness().await;
    let mut session = open(&mut h, "/q").await;
    let rejected = queue_call(&mut h, "GET", "/q", None, 401, 1).await;
    let evicted = h
        .service_mock(
            "PATCH",
            &format!("_apis/runtime/runnerscalesets/5/sessions/{SESSION}"),
            API,
        )
        .with_status(404)
        .with_body(
            r#"{"typeName":"X.RunnerAdminException, X","message":"session ID that doesn't exist"}"#,
        )
        .expect(1)
        .create_async()
        .await;
    let err = h
        .client
        .get_message(&mut session, MessageId(0), 1)
        .await
        .unwrap_err();
    assert!(err.is_session_expired_or_unknown(), "{err}");
    rejected.assert_async().await;
    evicted.assert_async().await;
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
        let create = create(&mut h, session_json(&queue_url, token)).await;
        let delete = close(&mut h, 204).await;
        let err = h
            .client
            .create_session(ScaleSetId(5), "me")
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::UnexpectedResponse { status: 200, .. }),
            "{case}: {err}"
        );
        assert!(err.to_string().contains(named), "{case}: {err}");
        assert_eq!(err.class(), ErrorClass::Retryable, "{case}");
        assert_eq!(err.open_session(), None, "{case}");
        create.assert_async().await;
        delete.assert_async().await;
    }
}

#[tokio::test]
async fn an_unusable_session_that_cannot_be_deleted_is_named_in_the_error() {
    let mut h = harness().await;
    let create = create(&mut h, session_json("", "t")).await;
    let delete = close(&mut h, 403).await;
    let err = h
        .client
        .create_session(ScaleSetId(5), "me")
        .await
        .unwrap_err();
    assert_eq!(err.open_session(), Some((ScaleSetId(5), SESSION)), "{err}");
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
    create.assert_async().await;
    delete.assert_async().await;
}

#[tokio::test]
async fn an_unusable_session_already_gone_on_delete_is_not_left_open() {
    let mut h = harness().await;
    let _create = create(&mut h, session_json("", "t")).await;
    let delete = close(&mut h, 404).await;
    let err = h
        .client
        .create_session(ScaleSetId(5), "me")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnexpectedResponse { .. }), "{err}");
    assert_eq!(err.open_session(), None);
    delete.assert_async().await;
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
    let err = h
        .client
        .create_session(ScaleSetId(5), "me")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnexpectedResponse { .. }), "{err}");
    delete.assert_async().await;
}
