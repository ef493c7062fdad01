//! Unit tests of exception parsing: short names, exact matching, nesting, conflict owners.

use serde_json::json;

use super::*;

#[test]
fn short_names_drop_namespace_and_assembly() {
    assert_eq!(
        short_type_name(
            "GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException, GitHub.Actions.Runtime.WebApi"
        ),
        "RunnerScaleSetExistsException"
    );
    assert_eq!(
        short_type_name("AgentExistsException"),
        "AgentExistsException"
    );
    assert_eq!(
        short_type_name("Ns.Outer+InnerException, Asm"),
        "InnerException"
    );
    assert_eq!(short_type_name(""), "");
}

#[test]
fn matching_is_exact() {
    assert_eq!(
        ExceptionKind::from_short_name("RunnerScaleSetExistsException"),
        ExceptionKind::RunnerScaleSetExists
    );
    assert_eq!(
        ExceptionKind::from_short_name("FooRunnerScaleSetExistsException"),
        ExceptionKind::Other
    );
    assert_eq!(
        ExceptionKind::from_short_name("RunnerScaleSetExistsExceptionX"),
        ExceptionKind::Other
    );
    assert_eq!(
        ExceptionKind::from_short_name("runnerscalesetexistsexception"),
        ExceptionKind::Other
    );
}

#[test]
fn nested_exceptions_are_found_through_inner_exception_and_strings() {
    let doc = json!({
        "typeName": "GitHub.Services.WebApi.VssServiceException, GitHub.Services.WebApi",
        "message": "wrapper",
        "innerException": {
            "typeName": "X.AgentExistsException, X",
            "message": "inner",
            "innerException": null
        },
        "customProperties": {
            "detail": "failed: {\"typeName\":\"X.JobStillRunningException, X\",\"message\":\"busy\"} (see logs)"
        }
    });
    let found = collect_exceptions(&doc);
    let kinds: Vec<_> = found.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            ExceptionKind::Other,
            ExceptionKind::AgentExists,
            ExceptionKind::JobStillRunning
        ]
    );
    assert_eq!(found[2].message, "busy");
}

#[test]
fn type_key_is_used_when_type_name_is_missing() {
    let found = collect_exceptions(&json!({"typeKey": "AgentNotFoundException", "message": "m"}));
    assert_eq!(found[0].kind, ExceptionKind::AgentNotFound);
}

#[test]
fn deep_nesting_is_bounded() {
    let mut doc = json!({"typeName": "A"});
    for _ in 0..100 {
        doc = json!({"typeName": "A", "innerException": doc});
    }
    assert!(collect_exceptions(&doc).len() <= MAX_NESTING + 1);
}

#[test]
fn conflict_owner_is_parsed_when_named() {
    assert_eq!(
        session_conflict_owner(
            "The actions runner scaleset x already has an active session for owner runner-1."
        ),
        Some("runner-1".to_owned())
    );
    assert_eq!(
        session_conflict_owner("The actions runner scaleset x already has an active session."),
        None
    );
    assert_eq!(session_conflict_owner("… for owner ."), None);
}
