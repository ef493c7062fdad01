//! A process test learns what happened from typed state (the API, `/readyz`, `/metrics`, the
//! store's rows and events, the simulator's history, the exit status), never from a daemon's
//! log. The rule, as the harnesses make it checkable:
//!
//! - a daemon's stderr reaches a test only through its harness (`Worker` in
//!   `bins/worker/tests/worker/helpers.rs`, `Server` in `bins/server/tests/server/main.rs`),
//!   whose field holding the lines is private and whose `log()` and `stop()` answer a type that
//!   can be printed in a failure message but not searched;
//! - the one accessor that answers the lines as text, `log_lines()`, is called only where the
//!   log is the subject ([`LOG_IS_THE_SUBJECT`]);
//! - nobody turns the printable type back into text to search it.
//!
//! Kept out, on purpose: a CLI's printed answer (`scalesetctl`, `--check`, a refused start's
//! `scaleset-worker: …` line, the `listening on` ready line) is the program's interface, and a
//! provider's stderr tail is a field of its typed error; tests assert on those.

use std::fs;
use std::path::Path;

/// The files that may read a daemon's log as text, and why.
const LOG_IS_THE_SUBJECT: &[(&str, &str)] = &[
    (
        "bins/worker/tests/worker/helpers.rs",
        "the harness that defines it",
    ),
    (
        "bins/worker/tests/worker/logs.rs",
        "the tests of the log's format (JSON fields, no colour codes)",
    ),
    (
        "bins/worker/tests/worker/rotation.rs",
        "asserts that no token reaches the log (a secret's absence from the log is the point)",
    ),
    (
        "bins/worker/tests/soak/run.rs",
        "the soak's report prints the notable lines; no check reads them",
    ),
];

/// `text` without `//` comments (a doc comment may name what the code must not call).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What in `text` (a test file at `path`, relative to the workspace) reads a daemon's log to
/// decide.
fn log_reads(path: &str, text: &str) -> Vec<String> {
    let code = code(text);
    let allowed = LOG_IS_THE_SUBJECT.iter().any(|(file, _)| *file == path);
    let mut found = Vec::new();
    let mut forbid = |needle: &str, why: &str| {
        if code.contains(needle) {
            found.push(format!("{path}: `{needle}`: {why}"));
        }
    };
    if !allowed {
        forbid(
            "log_lines(",
            "reads the log as text where the log is not the subject",
        );
        forbid(
            ".lines.lock()",
            "reads the harness's lines around its accessors",
        );
    }
    forbid(
        "pub(crate) lines:",
        "the harness's lines are private: tests go through log() and log_lines()",
    );
    for printable in ["log()", "stderr"] {
        forbid(
            &format!("{printable}.to_string()"),
            "turns a printable log back into text to search it",
        );
    }
    found
}

#[test]
fn process_tests_read_no_log_to_decide() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for group in ["crates", "bins", "tests"] {
        super::non_exhaustive::sources(&workspace.join(group), &mut files);
    }
    // Every test source but these checks, which name what they look for.
    let tests: Vec<_> = files
        .iter()
        .filter(|f| f.components().any(|c| c.as_os_str() == "tests"))
        .filter(|f| !f.starts_with(workspace.join("tests/structure")))
        .collect();
    assert!(tests.len() > 50, "the walk found the test sources");
    for (file, _) in LOG_IS_THE_SUBJECT {
        assert!(
            workspace.join(file).is_file(),
            "{file} is allowed to read the log but does not exist: update the list"
        );
    }
    let mut found = Vec::new();
    for file in tests {
        let text = fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let relative = file.strip_prefix(&workspace).unwrap_or(file);
        found.extend(log_reads(&relative.to_string_lossy(), &text));
    }
    assert!(
        found.is_empty(),
        "read typed state instead (the store's events, /readyz, /metrics, the simulator, the \
         exit status), or add it where there is none:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_finds_log_reads_outside_the_allowed_files_only() {
    // Split so that this file does not hold what it looks for.
    let text = concat!(
        "let lines = worker.log_",
        "lines();\n",
        "// worker.log_",
        "lines() in a comment is no call\n",
        "let text = worker.log()",
        ".to_string();\n",
    );
    assert_eq!(
        log_reads("bins/worker/tests/worker/main.rs", text).len(),
        2,
        "{:?}",
        log_reads("bins/worker/tests/worker/main.rs", text)
    );
    assert_eq!(
        log_reads("bins/worker/tests/worker/logs.rs", text).len(),
        1,
        "the log's own tests may read its lines, but not search the printable log"
    );
    assert!(
        log_reads(
            "bins/worker/tests/worker/main.rs",
            "let log = worker.log();"
        )
        .is_empty()
    );
}
