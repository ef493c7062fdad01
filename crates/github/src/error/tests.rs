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

#[test]
fn a_duplicate_answers_every_predicate_like_the_original() {
    let timeout = Error::RetriesExhausted {
        endpoint: Endpoint::RunnerRegistration,
        attempts: 5,
        last: Box::new(Error::Timeout {
            endpoint: Endpoint::RunnerRegistration,
            host: "h".into(),
            timeout: Duration::from_secs(1),
        }),
    };
    let copy = timeout.duplicate();
    assert!(copy.is_timeout());
    assert_eq!(copy.to_string(), timeout.to_string());
    assert_eq!(copy.endpoint(), Some(Endpoint::RunnerRegistration));

    let conflict = service(
        409,
        r#"{"typeName":"X.RunnerScaleSetSessionConflictException, X","message":"... for owner me."}"#,
    );
    assert_eq!(conflict.duplicate().class(), conflict.class());

    let transport = Error::Transport {
        endpoint: Endpoint::GetScaleSet,
        host: "h".into(),
        source: Box::new(std::io::Error::other("connection refused")),
    };
    let copy = transport.duplicate();
    assert!(copy.is_transport());
    let source = std::error::Error::source(&copy).map(ToString::to_string);
    assert_eq!(source.as_deref(), Some("connection refused"));
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
