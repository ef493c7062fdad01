//! The workspace's module graph has no circles: within each crate, no two sibling modules use
//! each other, directly or around a loop (STYLE: one direction of use between modules, so each
//! can be read, tested and moved without the other; issue 10).
//!
//! It reads the sources as text. A module is a file under a crate's `src/`; its uses are the
//! `crate::` and `super::` paths it names outside comments, grouped imports
//! (`use crate::{a::X, b}`) included, each resolved to the deepest module it names. Test modules
//! count as part of the module they sit in: a test that imports a higher layer closes a circle
//! as surely as the code does. A child using its parent (`use super::*`) is not a circle; a
//! parent declares its children, and only edges between siblings are compared.

mod crate_edges;
mod executors;
mod log_reads;
mod non_exhaustive;
mod test_names;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path inside its crate (`["state", "job"]` for `src/state/job.rs`).
type ModulePath = Vec<String>;

#[test]
fn no_crate_has_a_circle_among_its_modules() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // Every package: those under crates/ and bins/, and this one.
    let mut packages = vec![workspace.join("tests")];
    for group in ["crates", "bins"] {
        let dir = workspace.join(group);
        let entries =
            fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        packages.extend(entries.flatten().map(|entry| entry.path()));
    }
    // Every crate with modules: a package's library or binary (`src/`), and its integration-test
    // crates that have modules (`tests/<name>/main.rs`, or `<name>/main.rs` in this package).
    let mut crates = Vec::new();
    for package in &packages {
        if package.join("src").is_dir() {
            crates.push(package.join("src"));
        }
        for dir in [package.join("tests"), package.clone()] {
            for suite in fs::read_dir(dir).into_iter().flatten().flatten() {
                if suite.path().join("main.rs").is_file() {
                    crates.push(suite.path());
                }
            }
        }
    }
    crates.sort();
    crates.dedup();
    assert!(
        crates.len() >= 20,
        "found only {} crates with modules: is the workspace layout still the one this test expects?",
        crates.len()
    );

    let circles: Vec<String> = crates
        .iter()
        .filter_map(|src| {
            let circle = find_circle(&read_modules(src))?;
            let shown = src.strip_prefix(&workspace).unwrap_or(src);
            Some(format!("{}: {}", shown.display(), circle.join(" -> ")))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "module circles (move what both sides need into a module of its own, or turn one use around):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_relative_uses() {
    let modules = BTreeMap::from([
        (path(&["a"]), "use crate::{b::X, c};\n".to_owned()),
        (
            path(&["b"]),
            "// crate::a::Y in a comment is no use\n".to_owned(),
        ),
        (
            path(&["c"]),
            "fn f() -> super::a::Z { todo!() }\n".to_owned(),
        ),
        (path(&["c", "inner"]), "use super::super::b;\n".to_owned()),
    ]);
    let edges = module_edges(&modules);
    assert!(edges.contains(&(path(&["a"]), path(&["b"]))));
    assert!(edges.contains(&(path(&["a"]), path(&["c"]))));
    assert!(edges.contains(&(path(&["c"]), path(&["a"]))));
    assert!(edges.contains(&(path(&["c", "inner"]), path(&["b"]))));
    assert!(!edges.contains(&(path(&["b"]), path(&["a"]))));
    assert_eq!(
        find_circle(&modules),
        Some(vec!["a".to_owned(), "c".to_owned(), "a".to_owned()])
    );
}

#[test]
fn a_child_using_its_parent_and_a_one_way_chain_are_no_circle() {
    let modules = BTreeMap::from([
        (path(&[]), "mod a; mod b; use crate::a::A;\n".to_owned()),
        (path(&["a"]), "use super::*; use crate::b::B;\n".to_owned()),
        (path(&["a", "tests"]), "use super::super::b;\n".to_owned()),
        (path(&["b"]), "use crate::Root;\n".to_owned()),
    ]);
    assert_eq!(find_circle(&modules), None);
}

#[test]
fn a_circle_through_a_child_module_is_found_between_the_siblings() {
    // `state::tests` imports `protocol`, which imports `state`: a circle between siblings.
    let modules = BTreeMap::from([
        (path(&["state"]), String::new()),
        (
            path(&["state", "tests"]),
            "use crate::protocol;\n".to_owned(),
        ),
        (path(&["protocol"]), "use crate::state::Job;\n".to_owned()),
    ]);
    assert_eq!(
        find_circle(&modules),
        Some(vec![
            "protocol".to_owned(),
            "state".to_owned(),
            "protocol".to_owned()
        ])
    );
}

fn path(parts: &[&str]) -> ModulePath {
    parts.iter().map(|p| (*p).to_owned()).collect()
}

/// Every `.rs` file under `src`, by module path, with its text.
fn read_modules(src: &Path) -> BTreeMap<ModulePath, String> {
    let mut modules = BTreeMap::new();
    let mut pending = vec![src.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries.flatten() {
            let file: PathBuf = entry.path();
            if file.is_dir() {
                pending.push(file);
            } else if file.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
                modules.insert(module_path(src, &file), text);
            }
        }
    }
    modules
}

fn module_path(src: &Path, file: &Path) -> ModulePath {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: ModulePath = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|p| matches!(p.as_str(), "mod" | "lib" | "main"))
    {
        parts.pop();
    }
    parts
}

/// Which module uses which: `(user, used)`, each the deepest module the path names.
fn module_edges(modules: &BTreeMap<ModulePath, String>) -> BTreeSet<(ModulePath, ModulePath)> {
    let mut edges = BTreeSet::new();
    for (module, text) in modules {
        let code: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for named in used_paths(&code) {
            let absolute = match named.first().map(String::as_str) {
                Some("crate") => named[1..].to_vec(),
                Some("super") => {
                    let ups = named.iter().take_while(|p| *p == "super").count();
                    let Some(base) = module.len().checked_sub(ups) else {
                        continue;
                    };
                    module[..base]
                        .iter()
                        .chain(&named[ups..])
                        .cloned()
                        .collect()
                }
                _ => continue,
            };
            let used = (0..=absolute.len())
                .rev()
                .map(|n| absolute[..n].to_vec())
                .find(|prefix| modules.contains_key(prefix))
                .unwrap_or_default();
            if &used != module {
                edges.insert((module.clone(), used));
            }
        }
    }
    edges
}

/// The `crate::…` and `super::…` paths in `code`, grouped imports expanded (`crate::{a::X, b}`
/// gives `crate::a::X` and `crate::b`).
fn used_paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    for root in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(root).map(|i| i + from) {
            from = at + root.len();
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
                // `x::super::` or `my_crate::`: not a path that starts here.
                continue;
            }
            let prefix = vec![root.trim_end_matches(':').to_owned()];
            expand(&code[from..], prefix, &mut found);
        }
    }
    found
}

/// Reads one path (or group) from the start of `rest`, appending each full path to `found`.
fn expand(rest: &str, mut prefix: Vec<String>, found: &mut Vec<Vec<String>>) {
    let mut rest = rest.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            for item in split_group(group) {
                expand(item, prefix.clone(), found);
            }
            return;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        prefix.push(rest[..end].to_owned());
        match rest[end..].trim_start().strip_prefix("::") {
            Some(next) => rest = next.trim_start(),
            None => break,
        }
    }
    found.push(prefix);
}

/// The top-level items of a `{…}` group whose opening brace has been read.
fn split_group(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

/// One circle among sibling modules, as names from the first back to itself, if there is one.
/// A use between modules in different subtrees counts between the two siblings that contain
/// them under their nearest common parent.
fn find_circle(modules: &BTreeMap<ModulePath, String>) -> Option<Vec<String>> {
    let mut between: BTreeMap<ModulePath, BTreeSet<ModulePath>> = BTreeMap::new();
    for (user, used) in module_edges(modules) {
        let common = user.iter().zip(&used).take_while(|(a, b)| a == b).count();
        if common < user.len() && common < used.len() {
            between
                .entry(user[..=common].to_vec())
                .or_default()
                .insert(used[..=common].to_vec());
        }
    }
    let mut done = BTreeSet::new();
    for start in between.keys() {
        let mut stack = Vec::new();
        if let Some(circle) = walk(start, &between, &mut stack, &mut done) {
            return Some(circle.iter().map(|m| m.join("::")).collect());
        }
    }
    None
}

/// Depth-first search from `node`; `stack` is the path that led here.
fn walk(
    node: &ModulePath,
    between: &BTreeMap<ModulePath, BTreeSet<ModulePath>>,
    stack: &mut Vec<ModulePath>,
    done: &mut BTreeSet<ModulePath>,
) -> Option<Vec<ModulePath>> {
    if let Some(at) = stack.iter().position(|m| m == node) {
        let mut circle = stack[at..].to_vec();
        circle.push(node.clone());
        return Some(circle);
    }
    if done.contains(node) {
        return None;
    }
    stack.push(node.clone());
    for next in between.get(node).into_iter().flatten() {
        if let Some(circle) = walk(next, between, stack, done) {
            return Some(circle);
        }
    }
    stack.pop();
    done.insert(node.clone());
    None
}
