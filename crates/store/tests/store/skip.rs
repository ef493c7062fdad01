//! The PostgreSQL half must never pass silently when it did not run: without
//! `SCALESET_TEST_DATABASE_URL` it says so past libtest's capture, and with
//! `SCALESET_REQUIRE_POSTGRES=1` it fails instead. Checked by running this very test binary again
//! as a child process with a controlled environment (the process environment is never mutated).

use std::process::{Command, Output};

use crate::helpers::{PG_VAR, REQUIRE_PG_VAR};

/// Runs one PostgreSQL-half test of this binary in a child process, without the database
/// variable, and with `require` as the value of the require variable when given.
fn run_postgres_half_without_database(require: Option<&str>) -> Output {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let mut child = Command::new(exe);
    child
        .args([
            "--exact",
            "controller::empty_database_adopts_the_configured_id::postgres",
        ])
        .env_remove(PG_VAR)
        .env_remove(REQUIRE_PG_VAR);
    if let Some(value) = require {
        child.env(REQUIRE_PG_VAR, value);
    }
    child.output().expect("run the test binary again")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn an_unset_database_variable_is_reported_as_skipped() {
    let output = run_postgres_half_without_database(None);
    let text = text(&output);
    assert!(output.status.success(), "the skip passes: {text}");
    assert!(text.contains("1 passed"), "the chosen test ran: {text}");
    assert!(
        text.contains("SKIPPED: the PostgreSQL half") && text.contains(PG_VAR),
        "the skip is printed past the capture, naming the variable: {text}"
    );
}

#[test]
fn a_required_database_fails_when_the_variable_is_unset() {
    let output = run_postgres_half_without_database(Some("1"));
    let text = text(&output);
    assert!(
        !output.status.success(),
        "a required PostgreSQL half must fail: {text}"
    );
    assert!(
        text.contains(REQUIRE_PG_VAR) && text.contains(PG_VAR),
        "the failure names both variables: {text}"
    );
}
