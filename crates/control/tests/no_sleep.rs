//! Steps never sleep (issue 30 item 2): every wait in `crates/control/src` goes through the
//! one cancel-aware wait in `src/wait.rs`. A `sleep` written anywhere else in `src` (code, not
//! comments) fails this test, so a wait that cannot be cancelled cannot come back unnoticed.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The lines of `source` that call or name a sleep, comments left out (a comment may say
/// "nothing here sleeps").
fn sleeping_lines(source: &str) -> Vec<(usize, &str)> {
    source
        .lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let code = line.split("//").next().unwrap_or_default();
            code.contains("sleep").then_some((index + 1, line.trim()))
        })
        .collect()
}

#[test]
fn the_rule_finds_a_sleep_in_code_and_not_in_comments() {
    let source =
        "//! nothing here sleeps\nlet a = 1; // no sleep\n    tokio::time::sleep(d).await;\n";
    assert_eq!(
        sleeping_lines(source),
        [(3, "tokio::time::sleep(d).await;")]
    );
    assert_eq!(
        sleeping_lines("std::thread::sleep(d);"),
        [(1, "std::thread::sleep(d);")]
    );
}

#[test]
fn no_code_in_control_sleeps_outside_the_one_wait() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let the_wait = src.join("wait.rs");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.contains(&the_wait),
        "src/wait.rs, which holds the one wait, is missing"
    );
    assert!(files.len() > 10, "found only {} source files", files.len());
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| **f != the_wait) {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        for (line, code) in sleeping_lines(&source) {
            offenders.push(format!("{}:{line}: {code}", file.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "these lines sleep; wait through `wait::wait_until` (or `wait_for`, `wait_jittered`) \
         instead, or return what to do next from the step:\n{}",
        offenders.join("\n")
    );
}
