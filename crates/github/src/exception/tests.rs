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
    for (name, kind) in [
        (
            "RunnerScaleSetExistsException",
            ExceptionKind::RunnerScaleSetExists,
        ),
        ("FooRunnerScaleSetExistsException", ExceptionKind::Other),
        ("RunnerScaleSetExistsExceptionX", ExceptionKind::Other),
        ("runnerscalesetexistsexception", ExceptionKind::Other),
    ] {
        assert_eq!(ExceptionKind::from_short_name(name), kind, "{name}");
    }
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

const LEAF: &str = "X.AgentExistsException, X";

/// The ways one error document can hold another, each one level deeper.
#[derive(Clone, Copy, Debug)]
enum Wrap {
    /// `{"innerException": inner}`.
    Inner,
    /// `{"details": inner}`: another object field.
    Field,
    /// `{"details": "<inner as JSON text>"}`: a document written into a string field.
    Text,
    /// `[inner]`.
    Array,
}

fn wrapped(levels: usize, wrap: Wrap) -> Value {
    let mut doc = json!({"typeName": LEAF, "message": "deepest"});
    for _ in 0..levels {
        doc = match wrap {
            Wrap::Inner => json!({"innerException": doc}),
            Wrap::Field => json!({"details": doc}),
            Wrap::Text => json!({"details": doc.to_string()}),
            Wrap::Array => json!([doc]),
        };
    }
    doc
}

fn finds_leaf(doc: &Value) -> bool {
    collect_exceptions(doc)
        .iter()
        .any(|e| e.kind == ExceptionKind::AgentExists)
}

#[test]
fn an_exception_is_found_up_to_the_nesting_cap_on_every_path_and_not_beyond() {
    for wrap in [Wrap::Inner, Wrap::Field, Wrap::Text, Wrap::Array] {
        assert!(finds_leaf(&wrapped(0, wrap)), "{wrap:?} at the top");
        assert!(
            finds_leaf(&wrapped(MAX_NESTING, wrap)),
            "{wrap:?}: {MAX_NESTING} levels deep is within the cap"
        );
        assert!(
            !finds_leaf(&wrapped(MAX_NESTING + 1, wrap)),
            "{wrap:?}: one level past the cap is not followed"
        );
    }
}

#[test]
fn an_error_body_that_is_a_json_array_is_searched() {
    let doc = json!([
        {"typeName": "X.InvalidRunnerScaleSetException, X", "message": "bad"},
        {"typeName": "X.RunnerScaleSetExistsException, X", "message": "dup"}
    ]);
    let kinds: Vec<_> = collect_exceptions(&doc)
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            ExceptionKind::InvalidRunnerScaleSet,
            ExceptionKind::RunnerScaleSetExists
        ]
    );
}

#[test]
fn a_double_encoded_error_body_is_searched() {
    // The whole body is a JSON string holding the error document (a proxy re-encoded it).
    let inner = json!({"typeName": "X.RunnerScaleSetExistsException, X", "message": "dup"});
    let doc = Value::String(inner.to_string());
    let found = collect_exceptions(&doc);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, ExceptionKind::RunnerScaleSetExists);
    assert_eq!(found[0].message, "dup");
    // A string inside arrays counts one level more than the arrays around it.
    let in_arrays = |arrays: usize| {
        let mut doc = Value::String(json!({"typeName": LEAF}).to_string());
        for _ in 0..arrays {
            doc = json!([doc]);
        }
        doc
    };
    assert!(finds_leaf(&in_arrays(MAX_NESTING - 1)), "at the cap");
    assert!(!finds_leaf(&in_arrays(MAX_NESTING)), "past the cap");
}

#[test]
fn text_around_an_embedded_document_is_ignored_but_a_broken_span_is_not_a_document() {
    assert!(embedded_document("failed: {\"typeName\":\"A\"} (see logs)").is_some());
    assert!(embedded_document("} before {").is_none());
    assert!(embedded_document("{}").is_some());
    assert!(embedded_document("no braces").is_none());
    assert!(embedded_document("[1, 2]").is_none());
    assert!(embedded_document("{not json}").is_none());
}

#[test]
fn every_known_short_name_has_its_kind() {
    let table = [
        (
            "RunnerScaleSetExistsException",
            ExceptionKind::RunnerScaleSetExists,
        ),
        (
            "RunnerScaleSetNotFoundException",
            ExceptionKind::RunnerScaleSetNotFound,
        ),
        (
            "RunnerScaleSetSessionConflictException",
            ExceptionKind::RunnerScaleSetSessionConflict,
        ),
        (
            "RunnerScaleSetSessionExpiredException",
            ExceptionKind::RunnerScaleSetSessionExpired,
        ),
        ("RunnerAdminException", ExceptionKind::RunnerAdmin),
        ("AgentExistsException", ExceptionKind::AgentExists),
        ("AgentNotFoundException", ExceptionKind::AgentNotFound),
        ("JobStillRunningException", ExceptionKind::JobStillRunning),
        ("InvalidTokenException", ExceptionKind::InvalidToken),
        (
            "InvalidRunnerScaleSetException",
            ExceptionKind::InvalidRunnerScaleSet,
        ),
        ("VssServiceException", ExceptionKind::Other),
    ];
    for (name, kind) in table {
        assert_eq!(ExceptionKind::from_short_name(name), kind, "{name}");
    }
}

#[test]
fn a_blank_type_name_falls_back_to_the_type_key() {
    let found = collect_exceptions(&json!({
        "typeName": "  ",
        "typeKey": "AgentNotFoundException",
        "message": "m"
    }));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, ExceptionKind::AgentNotFound);
    assert_eq!(found[0].type_name, "AgentNotFoundException");
    assert_eq!(found[0].message, "m");
}
