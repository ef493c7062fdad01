//! The configuration crate needs the control crate for its settings and the declared fleet's
//! types only (issue 30 item 4): every rule of a spec, a policy or an endpoint is the store's,
//! so a file and the API cannot drift. This reads `crates/config/src` as text and lists what
//! it names from `scaleset_control`.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// What the configuration crate may take from `scaleset_control`.
const ALLOWED: [&str; 3] = ["DeclaredScaleSet", "Fleet", "Settings"];

/// The items named after each `scaleset_control::` in `text`, grouped imports included.
fn named(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (_, rest) in text
        .match_indices("scaleset_control::")
        .map(|(i, m)| text.split_at(i + m.len()))
    {
        let items = match rest.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or_default(),
            None => rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or_default(),
        };
        for item in items.split(',') {
            let head = item.trim().split("::").next().unwrap_or_default().trim();
            if !head.is_empty() {
                names.insert(head.to_owned());
            }
        }
    }
    names
}

#[test]
fn config_takes_only_settings_and_fleet_types_from_control() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/config/src");
    let mut found = BTreeSet::new();
    let mut dirs = vec![src];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.extend(named(&fs::read_to_string(&path).unwrap()));
            }
        }
    }
    assert!(
        found.contains("Settings"),
        "the walk found the crate's sources"
    );
    let extra: Vec<&String> = found
        .iter()
        .filter(|n| !ALLOWED.contains(&n.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "crates/config takes {extra:?} from scaleset_control; only the settings and the fleet's \
         types belong there (move a rule to the store, or the type beside the fleet)"
    );
}

#[test]
fn the_reader_sees_single_and_grouped_names() {
    let text = "use scaleset_control::Settings;\npub use scaleset_control::{DeclaredScaleSet, Fleet};\nlet x = scaleset_control::planner::plan(y);";
    let got: Vec<String> = named(text).into_iter().collect();
    assert_eq!(got, ["DeclaredScaleSet", "Fleet", "Settings", "planner"]);
}
