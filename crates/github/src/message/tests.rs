//! Unit tests of message decoding: double-encoded bodies, unknown job types, BOM, malformed input.

use proptest::prelude::*;

use super::*;

fn message(body: &str) -> Message {
    Message::from_json(body.as_bytes()).unwrap()
}

#[test]
fn body_is_a_json_array_inside_a_string() {
    let inner = r#"[{"messageType":"JobAssigned","runnerRequestId":0,"jobId":"j-1","requestLabels":["x"],
        "queueTime":"2024-05-06T07:08:09.1234567Z","finishTime":"0001-01-01T00:00:00Z"},
        {"messageType":"JobStarted","jobId":"j-1","runnerId":7,"runnerName":"r-1"},
        {"messageType":"JobCompleted","jobId":"j-1","result":"succeeded","runnerId":7,"runnerName":"r-1"},
        {"messageType":"JobAvailable","runnerRequestId":42,"acquireJobUrl":"u"}]"#;
    let outer = serde_json::json!({
        "messageId": 100_000_171i64,
        "messageType": "RunnerScaleSetJobMessages",
        "body": inner,
        "statistics": {"totalAssignedJobs": 3}
    });
    let msg = message(&outer.to_string());
    assert_eq!(msg.message_id, crate::MessageId(100_000_171));
    assert_eq!(msg.statistics.unwrap().total_assigned_jobs, 3);
    assert_eq!(msg.jobs.len(), 4);
    assert_eq!(msg.skipped_job_messages, 0);
    let JobMessage::Assigned { job } = &msg.jobs[0] else {
        panic!("{:?}", msg.jobs[0])
    };
    assert_eq!(job.job_id, "j-1");
    assert_eq!(job.queue_time.unwrap().subsec_nanos(), 123_456_700);
    assert_eq!(job.finish_time, None);
    assert!(
        matches!(&msg.jobs[1], JobMessage::Started { runner_id: crate::RunnerId(7), runner_name, .. } if runner_name == "r-1")
    );
    assert!(matches!(&msg.jobs[2], JobMessage::Completed { result, .. } if result == "succeeded"));
    assert!(
        matches!(&msg.jobs[3], JobMessage::Available { job, acquire_job_url } if job.runner_request_id == crate::RunnerRequestId(42) && acquire_job_url == "u")
    );
}

#[test]
fn unknown_job_types_are_skipped_and_counted() {
    let inner = r#"[{"messageType":"JobFrobnicated"},{"messageType":"JobAssigned","jobId":"a"},{"messageType":5}]"#;
    let outer = serde_json::json!({"messageId": 1, "messageType": "RunnerScaleSetJobMessages", "body": inner});
    let msg = message(&outer.to_string());
    assert_eq!(msg.jobs.len(), 1);
    assert_eq!(msg.skipped_job_messages, 2);
}

#[test]
fn absent_empty_and_null_bodies_mean_no_jobs() {
    for doc in [
        r#"{"messageId":1,"messageType":"RunnerScaleSetJobMessages"}"#,
        r#"{"messageId":1,"messageType":"RunnerScaleSetJobMessages","body":""}"#,
        r#"{"messageId":1,"messageType":"RunnerScaleSetJobMessages","body":null}"#,
        r#"{"messageId":1,"messageType":"RunnerScaleSetJobMessages","body":"null"}"#,
    ] {
        let msg = message(doc);
        assert!(msg.jobs.is_empty(), "{doc}");
        assert_eq!(msg.message_id, crate::MessageId(1));
    }
}

#[test]
fn a_bom_is_stripped() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(
        br#"{"messageId":9,"messageType":"RunnerScaleSetJobMessages","body":"[]"}"#,
    );
    assert_eq!(
        Message::from_json(&bytes).unwrap().message_id,
        crate::MessageId(9)
    );
}

#[test]
fn a_malformed_body_string_is_an_error() {
    let err = Message::from_json(br#"{"messageId":1,"body":"[{"}"#).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err}");
    let err = Message::from_json(br#"{"messageId":1,"body":"{}"}"#).unwrap_err();
    assert!(matches!(err, Error::UnexpectedResponse { .. }), "{err}");
    let err = Message::from_json(b"").unwrap_err();
    assert!(matches!(err, Error::UnexpectedResponse { .. }), "{err}");
}

proptest! {
    #[test]
    fn decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Message::from_json(&bytes);
    }

    #[test]
    fn decoding_arbitrary_bodies_never_panics(body in ".{0,120}") {
        let doc = serde_json::json!({"messageId": 1, "body": body});
        let _ = Message::from_json(doc.to_string().as_bytes());
    }
}

#[test]
fn a_message_whose_body_does_not_decode_keeps_its_id_type_and_error() {
    let bytes = br#"{"messageId":7,"messageType":"RunnerScaleSetJobMessages","body":"[{"}"#;
    let err = Message::from_json(bytes).unwrap_err();
    let message = Message::undecodable(bytes, &err).expect("the envelope names an id");
    assert_eq!(message.message_id, crate::MessageId(7));
    assert_eq!(message.message_type, "RunnerScaleSetJobMessages");
    let text = message.undecodable.expect("the error is kept");
    assert!(text.contains("cannot decode"), "{text}");
    assert!(text.contains("EOF"), "the cause is quoted: {text}");
    assert!(message.jobs.is_empty());
}

#[test]
fn a_body_without_a_message_id_is_not_answered_as_a_message() {
    for bytes in [
        &b""[..],
        b"{",
        br#"{"body":"[{"}"#,
        br#"{"messageId":0,"body":"[{"}"#,
    ] {
        let err = Message::from_json(bytes).unwrap_err();
        assert_eq!(Message::undecodable(bytes, &err), None, "{bytes:?}");
    }
}
