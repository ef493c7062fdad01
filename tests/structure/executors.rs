//! Every delete in `control` goes through an executor (DESIGN §5: the cores decide, one
//! executor carries the commands out and decides nothing). Checked as text: in
//! `crates/control/src`, a provider's `.delete(`, a GitHub `remove_runner(`, `delete_session(`
//! and `generate_jit_config(` appear only in the files of [`EXECUTORS`], each with why it may.
//! A new call anywhere else is a decision made beside the cores: hand the core a fact and
//! let it give the command, or, for a session, give the session executor a decided command.

use std::fs;
use std::path::Path;

/// The calls only an executor makes.
const CALLS: &[&str] = &[
    ".delete(",
    "remove_runner(",
    "delete_session(",
    "generate_jit_config(",
];

/// The files of `crates/control/src` that may make them, and why.
const EXECUTORS: &[(&str, &str)] = &[
    (
        "scaler/executor.rs",
        "the teardown executor: carries out the teardown core's commands (runner removals, \
         instance deletes) and generates the JIT configs the scaler recorded intents for",
    ),
    (
        "session.rs",
        "the session executor: deletes a session the listener or an ensure decided to delete",
    ),
    (
        "adoption.rs",
        "the adoption driver: executes scaleset-adopt's commands, which close the sessions the \
         machine opened",
    ),
    (
        "observed_provider.rs",
        "the provider wrapper that times every call: it delegates a delete an executor asked for",
    ),
];

/// `text` without `//` comments (a doc comment may name what the code must not call).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The executor-only calls in `text` (a file at `path`, relative to `crates/control/src`).
fn calls_outside_executors(path: &str, text: &str) -> Vec<String> {
    if EXECUTORS.iter().any(|(file, _)| *file == path) {
        return Vec::new();
    }
    let code = code(text);
    CALLS
        .iter()
        .filter(|call| code.contains(*call))
        .map(|call| format!("{path}: `{call}`"))
        .collect()
}

#[test]
fn only_the_executors_delete_remove_or_generate_in_control() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/control/src");
    let mut files = Vec::new();
    super::non_exhaustive::sources(&src, &mut files);
    assert!(files.len() > 30, "the walk found control's sources");
    for (file, _) in EXECUTORS {
        assert!(
            src.join(file).is_file(),
            "{file} is named an executor but does not exist: update the list"
        );
    }
    let mut found = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let relative = file.strip_prefix(&src).unwrap_or(file);
        found.extend(calls_outside_executors(&relative.to_string_lossy(), &text));
    }
    assert!(
        found.is_empty(),
        "a delete, a runner removal, a session delete or a JIT generation outside the \
         executors: let a core decide it and an executor carry it out (crates/control/src):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_finds_each_call_outside_the_executors_only() {
    // Split so that this file does not hold what it looks for in code.
    let text = concat!(
        "provider.del",
        "ete(&pool, &id).await?;\n",
        "client.remove_",
        "runner(id).await?;\n",
        "// client.delete_",
        "session(id, s) in a comment is no call\n",
        "client.generate_jit_",
        "config(id, &request).await?;\n",
    );
    assert_eq!(
        calls_outside_executors("orphans.rs", text).len(),
        3,
        "{:?}",
        calls_outside_executors("orphans.rs", text)
    );
    assert!(calls_outside_executors("scaler/executor.rs", text).is_empty());
    assert!(
        calls_outside_executors("listener.rs", "self.rows().delete_instance(lease, &name)")
            .is_empty(),
        "a store row delete is no provider delete"
    );
}
