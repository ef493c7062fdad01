//! Unit tests of tolerant decoding: list counts, nulls, both RunnerSetting spellings, BOM.

use super::*;

#[test]
fn list_count_is_kept_when_sent_and_derived_when_absent() {
    let sent: List<i64> = serde_json::from_str(r#"{"count":0,"value":[1]}"#).unwrap();
    assert_eq!((sent.count, sent.value.len()), (0, 1));
    let absent: List<i64> = serde_json::from_str(r#"{"value":[1,2]}"#).unwrap();
    assert_eq!(absent.count, 2);
    let null: List<i64> = serde_json::from_str(r#"{"count":null,"value":null}"#).unwrap();
    assert_eq!((null.count, null.value.len()), (0, 0));
}

#[test]
fn nulls_and_odd_numbers_are_tolerated() {
    let set: crate::RunnerScaleSet =
        serde_json::from_str(r#"{"id":"7","name":null,"labels":null,"statistics":null,"status":1,"createdOn":"garbage"}"#)
            .unwrap();
    assert_eq!(
        (set.id, set.name.as_str(), set.status.as_str()),
        (crate::GithubScaleSetId(7), "", "1")
    );
    assert!(set.labels.is_empty() && set.created_on.is_none());
}

/// A secret the service sends as `null` (or leaves out) decodes as the empty secret, which the
/// callers then report as missing, rather than failing the whole response. Fails if a secret
/// field loses its `null_default` (secrecy's own `Deserialize` refuses `null`).
#[test]
fn null_secrets_decode_as_empty() {
    use secrecy::ExposeSecret as _;
    let session: crate::Session =
        serde_json::from_str(r#"{"sessionId":"s","messageQueueAccessToken":null}"#).unwrap();
    assert_eq!(session.message_queue_access_token.expose_secret(), "");
    let jit: crate::JitConfig =
        serde_json::from_str(r#"{"runner":{"id":1},"encodedJITConfig":null}"#).unwrap();
    assert_eq!(jit.encoded_jit_config.expose_secret(), "");
    let missing: crate::JitConfig = serde_json::from_str(r#"{"runner":{"id":1}}"#).unwrap();
    assert_eq!(missing.encoded_jit_config.expose_secret(), "");
}

#[test]
fn both_runner_setting_spellings_decode() {
    let lower: crate::RunnerScaleSet =
        serde_json::from_str(r#"{"runnerSetting":{"disableUpdate":true}}"#).unwrap();
    let upper: crate::RunnerScaleSet =
        serde_json::from_str(r#"{"RunnerSetting":{"disableUpdate":true}}"#).unwrap();
    let both: crate::RunnerScaleSet =
        serde_json::from_str(r#"{"runnerSetting":{"disableUpdate":true},"RunnerSetting":{}}"#)
            .unwrap();
    assert!(lower.runner_setting.disable_update);
    assert!(upper.runner_setting.disable_update);
    assert!(both.runner_setting.disable_update);
}

#[test]
fn requests_send_capital_runner_setting() {
    let body =
        serde_json::to_value(crate::NewRunnerScaleSet::new("n", crate::RunnerGroupId(1))).unwrap();
    assert_eq!(body["RunnerSetting"]["disableUpdate"], true);
    assert!(body.get("runnerSetting").is_none());
}

#[test]
fn decode_strips_the_bom_and_rejects_empty_bodies() {
    let group: crate::RunnerGroup = decode(
        Endpoint::GetRunnerGroupByName,
        200,
        b"\xEF\xBB\xBF{\"id\":3}",
    )
    .unwrap();
    assert_eq!(group.id, crate::RunnerGroupId(3));
    let err = decode::<crate::RunnerGroup>(Endpoint::GetRunnerGroupByName, 200, b"\xEF\xBB\xBF ")
        .unwrap_err();
    assert!(matches!(err, Error::UnexpectedResponse { .. }));
}
