//! Unit tests of instance output validation.

use proptest::prelude::*;

use super::*;

#[test]
fn a_full_garm_instance_parses() {
    let out = br#"{
        "provider_id": "88818ff3-1fca-4cb5-9b37-84bfc3511ea6",
        "name": "runner-abcdefgh",
        "os_type": "linux", "os_name": "ubuntu", "os_version": "22.04", "os_arch": "amd64",
        "addresses": [{"address": "10.0.0.5", "type": "private"}],
        "status": "running",
        "pool_id": "ignored-unknown-field",
        "provider_fault": ""
    }"#;
    let instance = parse_instance(out).expect("valid");
    assert_eq!(instance.provider_id, "88818ff3-1fca-4cb5-9b37-84bfc3511ea6");
    assert_eq!(instance.name, "runner-abcdefgh");
    assert_eq!(instance.os_name.as_deref(), Some("ubuntu"));
    assert_eq!(instance.addresses[0].kind, "private");
    assert_eq!(instance.status, InstanceStatus::Running);
    assert_eq!(instance.provider_fault, None);
}

#[test]
fn every_garm_status_is_accepted() {
    for status in [
        "running",
        "stopped",
        "error",
        "pending_delete",
        "pending_force_delete",
        "deleting",
        "deleted",
        "pending_create",
        "creating",
        "unknown",
    ] {
        let out = format!(r#"{{"provider_id":"p","name":"n","status":"{status}"}}"#);
        let instance = parse_instance(out.as_bytes()).expect(status);
        assert_eq!(instance.status.as_str(), status);
    }
}

#[test]
fn an_unknown_status_is_rejected() {
    let err = parse_instance(br#"{"provider_id":"p","name":"n","status":"exploded"}"#).unwrap_err();
    assert_eq!(
        err,
        OutputProblem::UnknownStatus {
            status: "exploded".into()
        }
    );
}

#[test]
fn a_missing_status_reads_as_unknown() {
    let instance = parse_instance(br#"{"provider_id":"p","name":"n"}"#).expect("valid");
    assert_eq!(instance.status, InstanceStatus::Unknown);
}

#[test]
fn missing_or_empty_ids_are_rejected() {
    assert_eq!(
        parse_instance(br#"{"name":"n","status":"running"}"#).unwrap_err(),
        OutputProblem::MissingProviderId
    );
    assert_eq!(
        parse_instance(br#"{"provider_id":"","name":"n"}"#).unwrap_err(),
        OutputProblem::MissingProviderId
    );
    assert_eq!(
        parse_instance(br#"{"provider_id":"p","status":"running"}"#).unwrap_err(),
        OutputProblem::MissingName
    );
}

#[test]
fn a_base64_provider_fault_is_decoded_and_plain_text_kept() {
    // Go's encoder prints []byte as base64: "quota exceeded".
    let out = br#"{"provider_id":"p","name":"n","status":"error","provider_fault":"cXVvdGEgZXhjZWVkZWQ="}"#;
    assert_eq!(
        parse_instance(out).unwrap().provider_fault.as_deref(),
        Some("quota exceeded")
    );
    let out =
        br#"{"provider_id":"p","name":"n","status":"error","provider_fault":"no quota left"}"#;
    assert_eq!(
        parse_instance(out).unwrap().provider_fault.as_deref(),
        Some("no quota left")
    );
}

#[test]
fn a_list_may_be_null_or_empty_and_each_entry_is_validated() {
    assert!(parse_instance_list(b"null").unwrap().is_empty());
    assert!(parse_instance_list(b"[]").unwrap().is_empty());
    let two = parse_instance_list(
        br#"[{"provider_id":"a","name":"a","status":"running"},{"provider_id":"b","name":"b","status":"stopped"}]"#,
    )
    .unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(
        parse_instance_list(br#"[{"provider_id":"a","name":"a"},{"name":"b"}]"#).unwrap_err(),
        OutputProblem::MissingProviderId
    );
}

#[test]
fn non_json_is_rejected_with_what_was_expected() {
    let err = parse_instance(b"Creating instance... done\n").unwrap_err();
    assert!(matches!(
        err,
        OutputProblem::NotJson {
            expected: "an instance object",
            ..
        }
    ));
    let err = parse_instance_list(br#"{"provider_id":"a","name":"a"}"#).unwrap_err();
    assert!(matches!(
        err,
        OutputProblem::NotJson {
            expected: "an array of instances",
            ..
        }
    ));
}

#[test]
fn instance_ids_reject_empty_and_control_characters() {
    assert!(InstanceId::new("").is_none());
    assert!(InstanceId::new("a\nb").is_none());
    assert_eq!(InstanceId::new("vm-1").unwrap().as_str(), "vm-1");
}

proptest! {
    #[test]
    fn parsers_never_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_instance(&bytes);
        let _ = parse_instance_list(&bytes);
    }
}
