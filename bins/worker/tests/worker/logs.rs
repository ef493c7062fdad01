//! What the worker's logs say, read as a log collector reads them: `--log-format json` parsed
//! line by line (issue 29 item 15), text without colour codes. The log is these tests' subject,
//! so they alone read it as text ([`Worker::log_lines`]); every other process test learns what
//! happened from typed state.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::helpers::{self, Worker, eventually, worker_env};

/// A JSON value parsed strictly: an object with the same key twice is an error (serde_json
/// keeps the last of the two, as jq does, which is how the scale set's name was lost).
struct Strict;

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_str<E>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut keys = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key.clone()) {
                return Err(de::Error::custom(format!("the key {key:?} appears twice")));
            }
            map.next_value::<Strict>()?;
        }
        Ok(Strict)
    }
}

/// Every string in `value`, at any depth.
fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_keep_the_scale_sets_name_and_hold_no_rust_debug_text() {
    let (_sim, site) = helpers::linux_site().await;
    let worker = Worker::spawn_logging(&site.config(), &worker_env(), "json");
    let log = ensured_logged(&worker).await;
    let mut ensured = None;
    // The ready line is the binary's answer to a supervisor, not a log line.
    for line in log
        .iter()
        .filter(|l| !l.starts_with("scaleset-worker listening on "))
    {
        if let Err(e) = serde_json::from_str::<Strict>(line) {
            panic!("a log line is not one JSON object with unique keys ({e}): {line}");
        }
        let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
        let mut texts = Vec::new();
        strings(&value, &mut texts);
        for text in texts {
            assert!(
                !text.starts_with("Some(") && !text.contains("Some(\"") && text != "None",
                "a field holds Rust debug text {text:?}: {line}"
            );
        }
        if value["message"] == "scale set ensured" {
            ensured = Some(value);
        }
    }
    let ensured = ensured.expect("the ensure was logged");
    // jq '.span.scale_set' names the scale set the line is about.
    assert_eq!(ensured["span"]["name"], "scale_set", "{ensured}");
    assert_eq!(ensured["span"]["scale_set"], "linux", "{ensured}");
    assert!(
        ensured["spans"]
            .as_array()
            .is_some_and(|spans| spans.iter().any(|s| s["scale_set"] == "linux")),
        "{ensured}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_logs_to_a_pipe_carry_no_terminal_colour_codes() {
    let (_sim, site) = helpers::linux_site().await;
    let worker = Worker::spawn_logging(&site.config(), &worker_env(), "text");
    let log = ensured_logged(&worker).await;
    assert!(
        log.iter().all(|line| !line.contains('\u{1b}')),
        "logs to a pipe are plain text, without terminal colour codes: {log:?}"
    );
}

/// The worker's log lines once the ensure of a scale set is among them: the line these tests
/// read is in the log, whatever happened before.
async fn ensured_logged(worker: &Worker) -> Vec<String> {
    eventually("the scale set's ensure is logged", || async {
        let lines = worker.log_lines();
        lines
            .iter()
            .any(|line| line.contains("scale set ensured"))
            .then_some(lines)
    })
    .await
}
