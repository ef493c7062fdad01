//! The one mapping from a control or fleet failure to HTTP: each class answers one status,
//! whatever the variant (and the crate) behind it.

use std::time::Duration;

use axum::http::StatusCode;
use scaleset_control::{Conflict, Dependency, Error, ErrorClass};
use scaleset_fleet::{Error as FleetError, PlanDigest};

use super::{ApiError, class_code, status};
use crate::v1::ErrorCode;

/// The status a control or fleet failure answers, through its one `From`.
fn answered(error: impl Into<ApiError>) -> (ErrorCode, StatusCode) {
    let code = error.into().code();
    (code, status(code))
}

fn digest(digit: char) -> PlanDigest {
    PlanDigest::parse(&digit.to_string().repeat(64)).expect("a digest")
}

#[test]
fn an_invalid_control_failure_is_a_400_invalid_input() {
    assert_eq!(
        class_code(ErrorClass::Invalid),
        ErrorCode::InvalidInput,
        "the class's code"
    );
    let error = FleetError::ScopeWithoutEntity {
        scale_set: "linux".to_owned(),
    };
    assert_eq!(error.class(), ErrorClass::Invalid);
    assert_eq!(
        answered(error),
        (ErrorCode::InvalidInput, StatusCode::BAD_REQUEST)
    );
}

#[test]
fn a_stale_plan_is_a_409_stale_plan_for_fleets_and_decommissions_alike() {
    let stale = [
        FleetError::StalePlan {
            reason: "scale set linux changed".to_owned(),
            current: None,
        },
        FleetError::StaleDecommission {
            current: digest('a'),
            reviewed: digest('b'),
        },
        FleetError::UnlistedScaleSet { github_id: 7 },
        FleetError::ProviderGone {
            provider: "lxd".to_owned(),
        },
    ];
    for error in stale {
        assert_eq!(error.class(), ErrorClass::Conflict(Conflict::StalePlan));
        assert!(error.is_stale_plan());
        assert_eq!(
            answered(error),
            (ErrorCode::StalePlan, StatusCode::CONFLICT)
        );
    }
}

#[test]
fn a_scale_set_another_worker_serves_is_a_409_lease_held() {
    let held = [
        FleetError::LeaseHeld {
            scale_set: "acme/linux".to_owned(),
            holder: "worker-2".to_owned(),
            ours: false,
        },
        FleetError::from(Error::LeaseLost {
            scale_set: "linux".to_owned(),
        }),
    ];
    for error in held {
        assert_eq!(error.class(), ErrorClass::Conflict(Conflict::LeaseHeld));
        assert_eq!(
            answered(error),
            (ErrorCode::LeaseHeld, StatusCode::CONFLICT)
        );
    }
}

#[test]
fn a_loop_failure_inside_a_fleet_failure_answers_as_the_loop_failure() {
    let inside = || Error::Cancelled {
        scale_set: "linux".to_owned(),
    };
    let through_fleet = ApiError::from(FleetError::from(inside()));
    assert!(matches!(
        through_fleet,
        ApiError::Control(Error::Cancelled { .. })
    ));
    assert_eq!(through_fleet.code(), ApiError::from(inside()).code());
}

#[test]
fn a_row_changed_meanwhile_is_a_409_in_use() {
    let error = Error::Store {
        during: "recording the plan",
        source: scaleset_store::Error::Conflict {
            entity: "scale set",
            detail: "unique (entity, runner group, name)".to_owned(),
        },
    };
    assert_eq!(error.class(), ErrorClass::Conflict(Conflict::Changed));
    assert_eq!(answered(error), (ErrorCode::InUse, StatusCode::CONFLICT));
}

#[test]
fn a_refusal_is_a_409() {
    let error = Error::ProviderAnswerRefused {
        provider: "lxd".to_owned(),
        runner: "linux-abcdefgh".to_owned(),
        code: "answered_other_name",
        reason: "it named linux-zzzzzzzz".to_owned(),
    };
    assert_eq!(error.class(), ErrorClass::Refusal);
    assert_eq!(answered(error), (ErrorCode::InUse, StatusCode::CONFLICT));
}

#[test]
fn a_github_failure_is_a_502_whether_it_passes_or_not() {
    let github = |source| Error::GitHub {
        scale_set: "linux".to_owned(),
        during: "listing scale sets",
        source,
    };
    let passing = github(scaleset_github::Error::Timeout {
        endpoint: scaleset_github::Endpoint::RegistrationToken,
        host: "api.github.com".to_owned(),
        timeout: Duration::from_secs(30),
    });
    assert_eq!(passing.class(), ErrorClass::Retryable(Dependency::GitHub));
    assert_eq!(
        answered(passing),
        (ErrorCode::GitHub, StatusCode::BAD_GATEWAY)
    );
    let lasting = github(scaleset_github::Error::InvalidConfig {
        reason: "GitHub App credentials at enterprise scope".to_owned(),
    });
    assert_eq!(lasting.class(), ErrorClass::Upstream(Dependency::GitHub));
    assert_eq!(
        answered(lasting),
        (ErrorCode::GitHub, StatusCode::BAD_GATEWAY)
    );
}

#[test]
fn a_database_or_provider_outage_or_a_stop_is_a_503() {
    let busy = Error::Store {
        during: "reading the scale sets",
        source: scaleset_store::Error::Stale {
            id: "6f1".to_owned(),
            expected: 3,
        },
    };
    assert_eq!(busy.class(), ErrorClass::Retryable(Dependency::Database));
    assert_eq!(
        answered(busy),
        (ErrorCode::Unavailable, StatusCode::SERVICE_UNAVAILABLE)
    );
    let stopping = Error::Cancelled {
        scale_set: "linux".to_owned(),
    };
    assert_eq!(stopping.class(), ErrorClass::Stopping);
    assert_eq!(
        answered(stopping),
        (ErrorCode::Unavailable, StatusCode::SERVICE_UNAVAILABLE)
    );
    for class in [
        ErrorClass::Retryable(Dependency::Provider),
        ErrorClass::Upstream(Dependency::Provider),
        ErrorClass::Upstream(Dependency::Database),
    ] {
        assert_eq!(
            status(class_code(class)),
            StatusCode::SERVICE_UNAVAILABLE,
            "{class:?}"
        );
    }
}

#[test]
fn an_internal_failure_is_a_500() {
    let corrupt = Error::InstanceId {
        instance: "a\u{7f}b".to_owned(),
    };
    assert_eq!(corrupt.class(), ErrorClass::Internal);
    assert_eq!(
        answered(corrupt),
        (ErrorCode::Internal, StatusCode::INTERNAL_SERVER_ERROR)
    );
}

#[test]
fn the_message_of_a_control_failure_is_its_chain() {
    let error = Error::GitHub {
        scale_set: "linux".to_owned(),
        during: "listing scale sets",
        source: scaleset_github::Error::InvalidConfig {
            reason: "use a PAT at enterprise scope".to_owned(),
        },
    };
    let expected = scaleset_store::chain(&error);
    assert_eq!(ApiError::from(error).to_string(), expected);
}
