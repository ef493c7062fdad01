//! Tests are named after the behaviour they pin, never after an issue number: a number that
//! resolves to nothing in the repository tells a reader nothing about what broke.

use std::fs;
use std::path::Path;

/// The functions in `text` whose name starts with `issue`, an optional `_`, and a number.
fn named_after_an_issue(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(at) = line.find("fn issue") else {
            continue;
        };
        let name: String = line[at + 3..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let rest = name["issue".len()..].trim_start_matches('_');
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            found.push(name);
        }
    }
    found
}

#[test]
fn no_function_is_named_after_an_issue_number() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for group in ["crates", "bins", "tests"] {
        super::non_exhaustive::sources(&workspace.join(group), &mut files);
    }
    assert!(files.len() > 100, "the walk found the sources");
    let mut named = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        for name in named_after_an_issue(&text) {
            named.push(format!("{}: {name}", file.display()));
        }
    }
    assert!(
        named.is_empty(),
        "name these after the behaviour they pin:\n{}",
        named.join("\n")
    );
}

#[test]
fn the_reader_finds_issue_numbered_names_only() {
    // Split so that this file does not hold the names it looks for.
    let text = concat!(
        "async f",
        "n issue_29_item_9_refuses() {}\n",
        "f",
        "n issue_tracker_is_read() {}\n",
        "f",
        "n issue30_a_policy_round_trips() {}\n",
        "// f",
        "n issue_3_in_a_comment is still a name\n",
        "fn drains() {}",
    );
    assert_eq!(
        named_after_an_issue(text),
        [
            "issue_29_item_9_refuses",
            "issue30_a_policy_round_trips",
            "issue_3_in_a_comment"
        ]
    );
}
