//! Unit tests of error classification and non-JSON error bodies.

use proptest::prelude::*;

use super::*;

fn service(status: u16, body: &str) -> Error {
    ServiceError::from_response(
        Endpoint::CreateScaleSet,
        status,
        body.as_bytes(),
        None,
        None,
    )
    .into()
}

#[test]
fn classification() {
    let exists = service(
        400,
        r#"{"typeName":"X.RunnerScaleSetExistsException, X","message":"dup"}"#,
    );
    assert_eq!(exists.class(), ErrorClass::Refusal(Refusal::ScaleSetExists));
    let invalid = service(
        400,
        r#"{"typeName":"X.InvalidRunnerScaleSetException, X","message":"bad"}"#,
    );
    assert_eq!(invalid.class(), ErrorClass::Fatal);
    assert_eq!(service(503, "").class(), ErrorClass::Retryable);
    assert_eq!(service(501, "").class(), ErrorClass::Fatal);
    let conflict = service(
        409,
        r#"{"typeName":"X.RunnerScaleSetSessionConflictException, X","message":"... already has an active session for owner me."}"#,
    );
    assert_eq!(
        conflict.class(),
        ErrorClass::Refusal(Refusal::SessionConflict {
            owner: Some("me".into())
        })
    );
}

#[test]
fn non_json_bodies_keep_their_text() {
    let err = ServiceError::from_response(
        Endpoint::AcquireJobs,
        404,
        b"404 page not found\n",
        None,
        None,
    );
    assert_eq!(err.body, ErrorBody::Text);
    assert_eq!(err.message, "404 page not found");
    let long = "x".repeat(5000);
    let err = ServiceError::from_response(Endpoint::AcquireJobs, 500, long.as_bytes(), None, None);
    assert!(err.message.chars().count() <= MAX_MESSAGE_CHARS + 1);
}

proptest! {
    #[test]
    fn error_bodies_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let err: Error = ServiceError::from_response(Endpoint::GetScaleSet, 400, &bytes, None, None).into();
        let _ = err.class();
        let _ = err.to_string();
    }
}

/// Callers that waited on one failed admin-token refresh all get that failure, shared: every
/// predicate, the class, the message and the source chain are those of the original.
#[test]
fn a_shared_refresh_failure_answers_like_the_original() {
    let shared = |error: Error| Error::SharedRefresh(std::sync::Arc::new(error));
    let timeout = shared(Error::RetriesExhausted {
        endpoint: Endpoint::RunnerRegistration,
        attempts: 5,
        last: Box::new(Error::Timeout {
            endpoint: Endpoint::RunnerRegistration,
            host: "h".into(),
            timeout: Duration::from_secs(1),
        }),
    });
    assert!(timeout.is_timeout());
    assert!(timeout.to_string().contains("giving up after 5 attempt(s)"));
    assert_eq!(timeout.endpoint(), Some(Endpoint::RunnerRegistration));
    assert_eq!(timeout.class(), ErrorClass::Retryable);

    let conflict_body = r#"{"typeName":"X.RunnerScaleSetSessionConflictException, X","message":"... for owner me."}"#;
    let conflict = shared(service(409, conflict_body));
    assert_eq!(conflict.class(), service(409, conflict_body).class());
    assert_eq!(conflict.status(), Some(409));

    let rejected = shared(
        ServiceError::from_response(Endpoint::RegistrationToken, 401, b"", None, None).into(),
    );
    assert_eq!(rejected.status(), Some(401));
    assert_eq!(rejected.class(), ErrorClass::Fatal);

    let transport = shared(Error::Transport {
        endpoint: Endpoint::GetScaleSet,
        host: "h".into(),
        source: Box::new(std::io::Error::other("connection refused")),
    });
    assert!(transport.is_transport());
    assert_eq!(transport.class(), ErrorClass::Retryable);
    let source = std::error::Error::source(&transport).map(ToString::to_string);
    assert_eq!(source.as_deref(), Some("connection refused"));

    let unusable = shared(Error::UnexpectedResponse {
        endpoint: Endpoint::RunnerRegistration,
        status: 200,
        reason: "no token".into(),
    });
    assert_eq!(unusable.status(), Some(200));
    assert_eq!(unusable.endpoint(), Some(Endpoint::RunnerRegistration));
}

#[test]
fn runner_registration_401_and_403_classify_as_retryable_even_unwrapped() {
    let at = |endpoint: Endpoint, status: u16| -> Error {
        ServiceError::from_response(endpoint, status, b"", None, None).into()
    };
    for status in [401, 403] {
        assert_eq!(
            at(Endpoint::RunnerRegistration, status).class(),
            ErrorClass::Retryable
        );
        assert_eq!(
            at(Endpoint::RegistrationToken, status).class(),
            ErrorClass::Fatal
        );
    }
    assert_eq!(
        at(Endpoint::RunnerRegistration, 404).class(),
        ErrorClass::Fatal
    );
}

#[test]
fn an_exception_is_named_by_its_exact_short_name_outer_or_nested() {
    let err = ServiceError::from_response(
        Endpoint::CreateScaleSet,
        400,
        br#"{"typeName":"Ns.WrapperException, Asm","message":"m","innerException":{"typeName":"Ns.CustomQuotaException, Asm"}}"#,
        None,
        None,
    );
    assert!(err.has_exception_named("WrapperException"));
    assert!(err.has_exception_named("CustomQuotaException"), "nested");
    assert!(
        !err.has_exception_named("QuotaException"),
        "a suffix is not the name"
    );
    assert!(
        !err.has_exception_named("Ns.CustomQuotaException"),
        "short names only"
    );
    let text = ServiceError::from_response(Endpoint::CreateScaleSet, 400, b"Quota", None, None);
    assert!(
        !text.has_exception_named("Quota"),
        "a text body names no exception"
    );
}

/// `is_timeout` decides whether a create must be looked up before it is retried: only a real
/// timeout (possibly the last of several attempts) says "it may have happened".
#[test]
fn only_a_timeout_is_a_timeout() {
    let timeout = Error::Timeout {
        endpoint: Endpoint::CreateScaleSet,
        host: "h".into(),
        timeout: Duration::from_secs(1),
    };
    let transport = Error::Transport {
        endpoint: Endpoint::CreateScaleSet,
        host: "h".into(),
        source: Box::new(std::io::Error::other("reset")),
    };
    assert!(timeout.is_timeout());
    assert!(!timeout.is_transport());
    assert!(transport.is_transport());
    assert!(!transport.is_timeout());
    assert!(!service(503, "").is_timeout());
    assert!(!service(503, "").is_transport());
    let exhausted = |last: Error| Error::RetriesExhausted {
        endpoint: Endpoint::CreateScaleSet,
        attempts: 5,
        last: Box::new(last),
    };
    assert!(exhausted(timeout).is_timeout());
    assert!(!exhausted(transport).is_timeout());
}

#[test]
fn unusable_success_responses_report_their_status() {
    let decode = Error::Decode {
        endpoint: Endpoint::GetScaleSet,
        status: 200,
        source: serde_json::from_str::<u8>("x").unwrap_err(),
    };
    assert_eq!(decode.status(), Some(200));
    assert_eq!(decode.endpoint(), Some(Endpoint::GetScaleSet));
    assert_eq!(decode.class(), ErrorClass::Fatal);
    let unexpected = Error::UnexpectedResponse {
        endpoint: Endpoint::GetMessage,
        status: 202,
        reason: "r".into(),
    };
    assert_eq!(unexpected.status(), Some(202));
    assert_eq!(unexpected.endpoint(), Some(Endpoint::GetMessage));
    assert_eq!(unexpected.class(), ErrorClass::Retryable);
    let left_open = Error::UnusableSessionLeftOpen {
        status: 201,
        scale_set_id: GithubScaleSetId(5),
        session_id: "s-1".into(),
        reason: "no token".into(),
        cleanup: Box::new(service(500, "")),
    };
    assert_eq!(left_open.status(), Some(201));
    assert_eq!(left_open.endpoint(), Some(Endpoint::CreateSession));
    assert_eq!(left_open.open_session(), Some((GithubScaleSetId(5), "s-1")));
    assert_eq!(unexpected.open_session(), None);
    assert_eq!(Error::JwtSigning.status(), None);
    assert_eq!(Error::JwtSigning.endpoint(), None);
}

#[test]
fn tls_failures_and_ambiguous_names_are_fatal() {
    let tls = Error::Tls {
        endpoint: Endpoint::RegistrationToken,
        host: "ghes.local".into(),
        source: Box::new(std::io::Error::other("UnknownIssuer")),
    };
    assert_eq!(tls.class(), ErrorClass::Fatal);
    assert_eq!(tls.endpoint(), Some(Endpoint::RegistrationToken));
    assert!(!tls.is_transport());
    let ambiguous = Error::Ambiguous {
        endpoint: Endpoint::GetScaleSetByName,
        name: "set".into(),
        count: 2,
    };
    assert_eq!(ambiguous.class(), ErrorClass::Fatal);
    assert_eq!(ambiguous.endpoint(), Some(Endpoint::GetScaleSetByName));
    assert!(
        ambiguous
            .to_string()
            .contains("2 items are named exactly \"set\"")
    );
}

/// Operators read this line in logs: endpoint, status, exception, message and both ids.
#[test]
fn a_service_error_reads_as_one_diagnostic_line() {
    let err = ServiceError::from_response(
        Endpoint::CreateScaleSet,
        400,
        br#"{"typeName":"X.RunnerScaleSetExistsException, X","message":"dup"}"#,
        Some("act-1".into()),
        None,
    );
    assert_eq!(
        err.to_string(),
        "create_scale_set: status 400: RunnerScaleSetExistsException: dup \
         (activity_id=act-1, github_request_id=-)"
    );
    let text = ServiceError::from_response(
        Endpoint::GetScaleSet,
        502,
        b"bad gateway",
        None,
        Some("r-1".into()),
    );
    assert_eq!(
        text.to_string(),
        "get_scale_set: status 502: bad gateway (activity_id=-, github_request_id=r-1)"
    );
}

#[test]
fn a_text_body_is_cut_after_exactly_the_limit() {
    let at_limit = "x".repeat(MAX_MESSAGE_CHARS);
    let err =
        ServiceError::from_response(Endpoint::AcquireJobs, 500, at_limit.as_bytes(), None, None);
    assert_eq!(
        err.message, at_limit,
        "a message at the limit is kept whole"
    );
    let over = "é".repeat(MAX_MESSAGE_CHARS + 1);
    let err = ServiceError::from_response(Endpoint::AcquireJobs, 500, over.as_bytes(), None, None);
    assert_eq!(err.message.chars().count(), MAX_MESSAGE_CHARS + 1);
    assert!(err.message.ends_with("é…"), "cut on characters, marked");
}

fn at(endpoint: Endpoint, status: u16, body: &str) -> Error {
    ServiceError::from_response(endpoint, status, body.as_bytes(), None, None).into()
}

#[test]
fn a_session_is_gone_by_its_exception_its_id_a_session_404_or_a_dead_queue_token() {
    let id = "8f3c6a52-0000-4000-8000-000000000001";
    let expired = at(
        Endpoint::DeleteSession,
        400,
        r#"{"typeName":"X.RunnerScaleSetSessionExpiredException, X","message":"expired"}"#,
    );
    assert_eq!(expired.session_gone(id), Some(SessionGone::Expired));
    let named = at(
        Endpoint::DeleteSession,
        400,
        &format!(r#"{{"typeName":"X.ArgumentException, X","message":"session {id} not found"}}"#),
    );
    assert_eq!(named.session_gone(id), Some(SessionGone::Named));
    for endpoint in [
        Endpoint::RefreshSession,
        Endpoint::DeleteSession,
        Endpoint::GetMessage,
        Endpoint::DeleteMessage,
    ] {
        assert_eq!(
            at(endpoint, 404, "Not Found").session_gone(id),
            Some(SessionGone::Evicted),
            "{endpoint:?}"
        );
    }
    assert_eq!(
        at(Endpoint::GetMessage, 401, "").session_gone(id),
        Some(SessionGone::QueueTokenExpired)
    );
}

#[test]
fn a_missing_scale_set_or_another_endpoints_404_is_no_sign_the_session_is_gone() {
    let id = "8f3c6a52-0000-4000-8000-000000000001";
    let scale_set_gone = at(
        Endpoint::GetMessage,
        404,
        r#"{"typeName":"X.RunnerScaleSetNotFoundException, X","message":"no such scale set"}"#,
    );
    assert_eq!(scale_set_gone.session_gone(id), None);
    assert_eq!(at(Endpoint::GetScaleSet, 404, "").session_gone(id), None);
    assert_eq!(
        at(Endpoint::DeleteSession, 403, "is not valid").session_gone(id),
        None
    );
    assert_eq!(at(Endpoint::DeleteSession, 500, id).session_gone(id), None);
}

#[test]
fn only_github_naming_the_session_is_proof_for_the_adoption_machine() {
    // The adoption machine is fed `SessionGone` only on proof; a listener takes any sign.
    assert!(SessionGone::Expired.names_the_session());
    assert!(SessionGone::Named.names_the_session());
    assert!(!SessionGone::Evicted.names_the_session());
    assert!(!SessionGone::QueueTokenExpired.names_the_session());
}
