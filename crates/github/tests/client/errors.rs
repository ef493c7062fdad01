//! Error mapping: exception names (exact, nested), predicates, diagnostic headers, BOM,
//! text/plain and empty bodies, and unusable success responses.

use scaleset_github::{
    Error, ErrorBody, ErrorClass, ExceptionKind, GithubScaleSetId, Refusal, Removal, RunnerId,
    Session,
};

use crate::helpers::{API, Harness, harness, session_json};

async fn create_error(status: usize, body: &str) -> Error {
    let mut h = harness().await;
    let mock = h
        .service_mock("POST", "_apis/runtime/runnerscalesets", API)
        .with_status(status)
        .with_header("ActivityId", "act-1")
        .with_header("X-GitHub-Request-Id", "req-1")
        .with_body(body)
        .expect(1)
        .create_async()
        .await;
    let err = h.failed_create_scale_set().await;
    mock.assert_async().await;
    err
}

#[tokio::test]
async fn duplicate_scale_set_is_recognised_with_headers() {
    let err = create_error(
        400,
        r#"{"$id":"1","innerException":null,"message":"exists","typeName":"GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException, GitHub.Actions.Runtime.WebApi","typeKey":"RunnerScaleSetExistsException","errorCode":0,"eventId":3000}"#,
    )
    .await;
    assert!(err.is_scale_set_exists());
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.exception_name(), Some("RunnerScaleSetExistsException"));
    assert_eq!(err.activity_id(), Some("act-1"));
    assert_eq!(err.request_id(), Some("req-1"));
    assert_eq!(err.class(), ErrorClass::Refusal(Refusal::ScaleSetExists));
    let text = err.to_string();
    assert!(
        text.contains("status 400") && text.contains("act-1") && text.contains("req-1"),
        "{text}"
    );
}

#[tokio::test]
async fn nested_duplicate_through_inner_exception() {
    let err = create_error(
        400,
        r#"{"typeName":"GitHub.Services.WebApi.VssServiceException, GitHub.Services.WebApi","message":"wrapped",
            "innerException":{"typeName":"GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException, GitHub.Actions.Runtime.WebApi","message":"exists"}}"#,
    )
    .await;
    assert!(err.is_scale_set_exists(), "{err:?}");
}

#[tokio::test]
async fn nested_duplicate_inside_the_message_string() {
    let inner = r#"{"typeName":"GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException, GitHub.Actions.Runtime.WebApi","message":"exists"}"#;
    let outer = serde_json::json!({
        "typeName": "GitHub.Actions.Runtime.WebApi.RunnerScaleSetCreateException, GitHub.Actions.Runtime.WebApi",
        "message": format!("create failed: {inner}")
    });
    let err = create_error(400, &outer.to_string()).await;
    assert!(err.is_scale_set_exists());
    assert_eq!(err.exception_name(), Some("RunnerScaleSetCreateException"));
}

#[tokio::test]
async fn unrelated_400_is_not_exists() {
    let err = create_error(
        400,
        r#"{"typeName":"GitHub.Actions.Runtime.WebApi.InvalidRunnerScaleSetException, GitHub.Actions.Runtime.WebApi","message":"labels are invalid"}"#,
    )
    .await;
    assert!(!err.is_scale_set_exists());
    assert_eq!(err.exception_name(), Some("InvalidRunnerScaleSetException"));
    assert!(
        err.service_error()
            .unwrap()
            .has_exception(&ExceptionKind::InvalidRunnerScaleSet)
    );
    assert_eq!(err.class(), ErrorClass::Fatal);
}

#[tokio::test]
async fn short_name_matching_is_exact() {
    let err = create_error(
        400,
        r#"{"typeName":"Evil.FooRunnerScaleSetExistsException, Evil","message":"not really"}"#,
    )
    .await;
    assert!(!err.is_scale_set_exists());
    assert_eq!(
        err.exception_name(),
        Some("FooRunnerScaleSetExistsException")
    );
}

#[tokio::test]
async fn text_plain_and_empty_bodies_give_clear_errors() {
    let mut h = harness().await;
    let text = h
        .service_mock("GET", "_apis/runtime/runnerscalesets/1", API)
        .with_status(404)
        .with_header("content-type", "text/plain; charset=utf-8")
        .with_body("404 page not found")
        .create_async()
        .await;
    let err = h
        .client
        .get_scale_set(GithubScaleSetId(1))
        .await
        .unwrap_err();
    let service = err.service_error().unwrap();
    assert_eq!((service.status, service.body), (404, ErrorBody::Text));
    assert_eq!(service.message, "404 page not found");
    assert!(err.to_string().contains("404 page not found"));
    text.assert_async().await;

    let empty = h
        .service_status("GET", "_apis/runtime/runnerscalesets/2", 403)
        .await;
    let err = h
        .client
        .get_scale_set(GithubScaleSetId(2))
        .await
        .unwrap_err();
    let service = err.service_error().unwrap();
    assert_eq!((service.status, service.body), (403, ErrorBody::Empty));
    assert!(err.to_string().contains("empty response body"), "{err}");
    empty.assert_async().await;

    let empty_ok = h
        .service_status("GET", "_apis/runtime/runnerscalesets/3", 200)
        .await;
    let err = h
        .client
        .get_scale_set(GithubScaleSetId(3))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::UnexpectedResponse { status: 200, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("empty"), "{err}");
    empty_ok.assert_async().await;
}

#[tokio::test]
async fn bom_is_stripped_from_success_and_error_bodies() {
    let mut h = harness().await;
    let mut ok = b"\xEF\xBB\xBF".to_vec();
    ok.extend_from_slice(br#"{"id":5,"name":"bom"}"#);
    let good = h
        .service_answer("GET", "_apis/runtime/runnerscalesets/5", API, ok)
        .await;
    assert_eq!(
        h.client
            .get_scale_set(GithubScaleSetId(5))
            .await
            .unwrap()
            .name,
        "bom"
    );
    good.assert_async().await;

    let mut bad = b"\xEF\xBB\xBF".to_vec();
    bad.extend_from_slice(
        br#"{"typeName":"X.RunnerScaleSetNotFoundException, X","message":"gone"}"#,
    );
    let missing = h
        .service_mock("GET", "_apis/runtime/runnerscalesets/6", API)
        .with_status(404)
        .with_body(bad)
        .create_async()
        .await;
    let err = h
        .client
        .get_scale_set(GithubScaleSetId(6))
        .await
        .unwrap_err();
    assert!(err.is_scale_set_not_found());
    assert_eq!(err.class(), ErrorClass::Refusal(Refusal::ScaleSetNotFound));
    missing.assert_async().await;
}

#[tokio::test]
async fn session_predicates() {
    let mut h = harness().await;
    let conflict = h
        .service_error("POST", "_apis/runtime/runnerscalesets/5/sessions", 409, r#"{"typeName":"GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException, GitHub.Actions.Runtime.WebApi","message":"The actions runner scaleset set already has an active session for owner scaleset-abc."}"#)
        .await;
    let err = h.failed_create_session(5).await;
    assert!(err.is_session_conflict());
    assert_eq!(
        err.session_conflict_owner().as_deref(),
        Some("scaleset-abc")
    );
    conflict.assert_async().await;

    let anonymous = h
        .service_error("POST", "_apis/runtime/runnerscalesets/6/sessions", 409, r#"{"typeName":"X.RunnerScaleSetSessionConflictException, X","message":"The actions runner scaleset set already has an active session."}"#)
        .await;
    let err = h.failed_create_session(6).await;
    assert!(err.is_session_conflict());
    assert_eq!(err.session_conflict_owner(), None);
    anonymous.assert_async().await;

    let expired = h
        .service_error("DELETE", "_apis/runtime/runnerscalesets/5/sessions/s-1", 400, r#"{"typeName":"X.RunnerScaleSetSessionExpiredException, X","message":"The session identifier s-1 is not valid."}"#)
        .await;
    let err = h.client.delete_session(GithubScaleSetId(5), "s-1").await;
    assert!(err.unwrap_err().is_session_expired_or_unknown());
    expired.assert_async().await;

    let queue = format!("{}/q", h.server.url());
    let session = open_session_of(&mut h, 7, &queue).await;
    let evicted = h
        .service_error(
            "PATCH",
            &format!("_apis/runtime/runnerscalesets/7/sessions/{}", session.session_id),
            404,
            r#"{"typeName":"X.RunnerAdminException, X","message":"Attempted to refresh a session ID that doesn't exist."}"#,
        )
        .await;
    let err = h.client.refresh_session(&session).await.unwrap_err();
    assert!(err.is_session_expired_or_unknown());
    assert!(!err.is_scale_set_not_found());
    evicted.assert_async().await;
}

/// Opens a session of scale set `id` (the harness opens 5) on the queue at `queue` (a full
/// URL) for the owner `me`, asserting the create call was made.
async fn open_session_of(h: &mut Harness, id: i64, queue: &str) -> Session {
    let create = h
        .service_answer(
            "POST",
            &format!("_apis/runtime/runnerscalesets/{id}/sessions"),
            API,
            session_json(queue, "t"),
        )
        .await;
    let session = h
        .client
        .create_session(GithubScaleSetId(id), "me")
        .await
        .unwrap();
    create.assert_async().await;
    session
}

#[tokio::test]
async fn runner_predicates() {
    let mut h = harness().await;
    let exists = h
        .service_error("POST", "_apis/runtime/runnerscalesets/5/generatejitconfig", 409, r#"{"typeName":"GitHub.DistributedTask.WebApi.AgentExistsException, GitHub.DistributedTask.WebApi","message":"runner already exists"}"#)
        .await;
    let err = h.failed_jit_config().await;
    assert!(err.is_agent_exists());
    assert_eq!(err.class(), ErrorClass::Refusal(Refusal::AgentExists));
    exists.assert_async().await;
}

const JOB_STILL_RUNNING: &str = r#"{"typeName":"GitHub.DistributedTask.WebApi.JobStillRunningException, GitHub.DistributedTask.WebApi","message":"still running"}"#;
const AGENT_NOT_FOUND: &str = r#"{"typeName":"GitHub.DistributedTask.WebApi.AgentNotFoundException, GitHub.DistributedTask.WebApi","message":"no agent"}"#;

#[tokio::test]
async fn removing_a_runner_answers_removed_gone_or_still_running() {
    let mut h = harness().await;
    let agent = "_apis/distributedtask/pools/0/agents/9";

    let busy = h
        .service_error("DELETE", agent, 400, JOB_STILL_RUNNING)
        .await;
    let answer = h.client.remove_runner(RunnerId(9)).await.unwrap();
    assert_eq!(answer, Removal::StillRunning);
    busy.assert_async().await;
    busy.remove_async().await;

    let missing = h.service_error("DELETE", agent, 404, AGENT_NOT_FOUND).await;
    assert_eq!(
        h.client.remove_runner(RunnerId(9)).await.unwrap(),
        Removal::Gone
    );
    missing.assert_async().await;
    missing.remove_async().await;

    // A 404 naming no exception (the router's text/plain one) is gone as well.
    let bare = h
        .service_error("DELETE", agent, 404, "404 page not found")
        .await;
    assert_eq!(
        h.client.remove_runner(RunnerId(9)).await.unwrap(),
        Removal::Gone
    );
    bare.assert_async().await;
    bare.remove_async().await;

    // The exception, not the status, says gone: a 400 naming it is gone too.
    let named = h.service_error("DELETE", agent, 400, AGENT_NOT_FOUND).await;
    assert_eq!(
        h.client.remove_runner(RunnerId(9)).await.unwrap(),
        Removal::Gone
    );
    named.assert_async().await;
    named.remove_async().await;

    // Any other refusal stays an error the caller must handle.
    let other = h
        .service_error(
            "DELETE",
            agent,
            400,
            r#"{"typeName":"X.ArgumentException, X","message":"bad"}"#,
        )
        .await;
    let err = h.client.remove_runner(RunnerId(9)).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    other.assert_async().await;
    other.remove_async().await;

    let denied = h.service_error("DELETE", agent, 403, "").await;
    let err = h.client.remove_runner(RunnerId(9)).await.unwrap_err();
    assert_eq!(err.status(), Some(403));
    denied.assert_async().await;
}

#[tokio::test]
async fn reading_a_runner_that_is_not_registered_is_none() {
    let mut h = harness().await;
    let agent = "_apis/distributedtask/pools/0/agents/10";

    let missing = h.service_error("GET", agent, 404, AGENT_NOT_FOUND).await;
    assert_eq!(h.client.get_runner(RunnerId(10)).await.unwrap(), None);
    missing.assert_async().await;
    missing.remove_async().await;

    let bare = h.service_error("GET", agent, 404, "").await;
    assert_eq!(h.client.get_runner(RunnerId(10)).await.unwrap(), None);
    bare.assert_async().await;
    bare.remove_async().await;

    // Another refusal is no answer about the runner: an error, not `None`.
    let denied = h.service_error("GET", agent, 403, "").await;
    let err = h.client.get_runner(RunnerId(10)).await.unwrap_err();
    assert_eq!(err.status(), Some(403));
    denied.assert_async().await;
}

#[tokio::test]
async fn empty_200_on_get_message_is_an_error() {
    let mut h = harness().await;
    let mut session = h.open_session_on("/scalesets/message", "q").await;
    let poll = h
        .server
        .mock("GET", "/scalesets/message")
        .with_status(200)
        .create_async()
        .await;
    let err = h.failed_poll(&mut session).await;
    assert!(
        matches!(err, Error::UnexpectedResponse { status: 200, .. }),
        "{err}"
    );
    poll.assert_async().await;
}

/// What a 409 means when its body names no exception: the status alone decides, and only on
/// the endpoint where a conflict has one meaning.
#[tokio::test]
async fn a_409_without_an_exception_is_a_conflict_on_session_create_and_jit_config() {
    const OTHER: &str = r#"{"typeName":"X.InvalidRunnerScaleSetException, X","message":"bad"}"#;
    // (what is called, status, content type, body, session conflict?, agent exists?)
    let cases: &[(&str, usize, &str, &str, bool, bool)] = &[
        ("session", 409, "text/plain", "conflict", true, false),
        ("session", 409, "text/plain", "", true, false),
        ("session", 409, "application/json", OTHER, false, false),
        ("session", 400, "text/plain", "conflict", false, false),
        ("jit", 409, "text/plain", "conflict", false, true),
        ("jit", 409, "text/plain", "", false, true),
        ("jit", 409, "application/json", OTHER, false, false),
        ("jit", 400, "text/plain", "conflict", false, false),
        ("scale set", 409, "text/plain", "", false, false),
    ];
    for &(call, status, content_type, body, conflict, exists) in cases {
        let mut h = harness().await;
        let path = match call {
            "session" => "_apis/runtime/runnerscalesets/5/sessions",
            "jit" => "_apis/runtime/runnerscalesets/5/generatejitconfig",
            _ => "_apis/runtime/runnerscalesets",
        };
        let mock = h
            .service_mock("POST", path, API)
            .with_status(status)
            .with_header("content-type", content_type)
            .with_body(body)
            .expect(1)
            .create_async()
            .await;
        let err = match call {
            "session" => h.failed_create_session(5).await,
            "jit" => h.failed_jit_config().await,
            _ => h.failed_create_scale_set().await,
        };
        let case = format!("{call} {status} {content_type} {body:?}");
        assert_eq!(err.is_session_conflict(), conflict, "{case}: {err}");
        assert_eq!(err.is_agent_exists(), exists, "{case}: {err}");
        if conflict {
            assert_eq!(
                err.class(),
                ErrorClass::Refusal(Refusal::SessionConflict { owner: None }),
                "{case}"
            );
        }
        if exists {
            assert_eq!(
                err.class(),
                ErrorClass::Refusal(Refusal::AgentExists),
                "{case}"
            );
        }
        mock.assert_async().await;
    }
}
