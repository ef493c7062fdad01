//! `#[non_exhaustive]` only where there are outside users (STYLE; issue 30 item 6): the API's
//! wire types (`crates/api/src/v1*`), the GitHub client (`crates/github`) and the adoption
//! machine (`crates/adopt`), which other programs embed and match on. Anywhere else the marker
//! forces a wildcard arm at every match inside the workspace, so a new variant compiles and is
//! silently mapped to some old one; without it, adding a variant is a compile error at each
//! match that must decide about it.

use std::fs;
use std::path::{Path, PathBuf};

/// Where the marker may stand, as paths from the workspace root.
const ALLOWED: [&str; 4] = [
    "crates/api/src/v1/",
    "crates/api/src/v1.rs",
    "crates/github/",
    "crates/adopt/",
];

/// Whether a source line is the attribute itself (not a mention of it in a comment, a string
/// or `finish_non_exhaustive()`).
fn is_marker(line: &str) -> bool {
    line.trim_start().starts_with("#[non_exhaustive]")
}

fn allowed(relative: &str) -> bool {
    ALLOWED.iter().any(|prefix| relative.starts_with(prefix))
}

/// Every `.rs` file under `dir`, build output left out.
pub(crate) fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn non_exhaustive_appears_only_in_api_v1_github_and_adopt() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for group in ["crates", "bins", "tests"] {
        sources(&workspace.join(group), &mut files);
    }
    let mut kept = 0;
    let mut misplaced = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let relative = file
            .strip_prefix(&workspace)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        for (n, line) in text.lines().enumerate() {
            if !is_marker(line) {
                continue;
            }
            if allowed(&relative) {
                kept += 1;
            } else {
                misplaced.push(format!("{relative}:{}", n + 1));
            }
        }
    }
    // The walk found the markers that belong: an empty walk would pass vacuously.
    assert!(
        kept >= 10,
        "found only {kept} #[non_exhaustive] in api::v1, github and adopt: is the layout still \
         the one this test expects?"
    );
    assert!(
        misplaced.is_empty(),
        "#[non_exhaustive] outside api::v1, github and adopt (only types other programs match \
         on carry it; remove it and give each match an arm per variant):\n{}",
        misplaced.join("\n")
    );
}

#[test]
fn the_guard_tells_the_attribute_from_mentions_and_places_from_each_other() {
    assert!(is_marker("    #[non_exhaustive]"));
    assert!(!is_marker(
        "        f.debug_struct(\"X\").finish_non_exhaustive()"
    ));
    assert!(!is_marker("/// not `#[non_exhaustive]` here"));
    assert!(allowed("crates/api/src/v1/scale_set.rs"));
    assert!(allowed("crates/api/src/v1.rs"));
    assert!(allowed("crates/github/src/error.rs"));
    assert!(allowed("crates/adopt/src/outcome.rs"));
    assert!(!allowed("crates/api/src/error.rs"));
    assert!(!allowed("crates/api/src/v1_extra/x.rs"));
    assert!(!allowed("crates/store/src/error.rs"));
}
