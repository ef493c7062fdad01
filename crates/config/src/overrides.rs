//! `SCALESET_…` environment overrides applied to the parsed file before it is validated.
//!
//! `SCALESET_<SECTION>__<KEY>` sets `[section] key` (a double underscore separates the parts,
//! a number indexes an array of tables: `SCALESET_SCALE_SET__0__MAX_RUNNERS`). A variable
//! without `__` sets a top-level key (`SCALESET_CONTROLLER_ID`) when one has that name and is
//! otherwise left alone, because operators keep other `SCALESET_…` variables (key material
//! named by `[[encryption.keys]] env`, for instance). A variable with `__` whose first part is
//! not a section is an error naming the variable: a typo must not be ignored.

use std::collections::BTreeMap;

use toml::{Table, Value};

use crate::Problem;
use crate::raw::TOP_LEVEL;

/// The prefix of every override.
pub(crate) const PREFIX: &str = "SCALESET_";

/// Applies every override in `env` to `table`; returns the variables applied.
pub(crate) fn apply(
    table: &mut Table,
    env: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) -> Vec<String> {
    let mut applied = Vec::new();
    for (name, value) in env {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        if path.len() == 1 {
            let key = &path[0];
            if !matches!(key.as_str(), "controller_id" | "owner_label") {
                continue;
            }
        } else if !TOP_LEVEL.contains(&path[0].as_str()) || path.iter().any(String::is_empty) {
            problems.push(Problem::new(
                name.clone(),
                format!(
                    "no configuration key {:?}: the first part must be one of {}",
                    path.join("."),
                    TOP_LEVEL.join(", ")
                ),
            ));
            continue;
        }
        match set(table, &path, value) {
            Ok(()) => applied.push(name.clone()),
            Err(reason) => problems.push(Problem::new(name.clone(), reason.to_string())),
        }
    }
    applied
}

/// Why an override cannot be written into the file's table.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum SetError {
    /// No key at all.
    #[error("an empty key")]
    EmptyKey,
    /// A list named without an index after it.
    #[error("{part} is a list: the next part must be an index")]
    NoIndex {
        /// The list's key.
        part: String,
    },
    /// An index past the end of a list.
    #[error("{part} has {len} entries; index {index} would leave a gap")]
    Gap {
        /// The list's key.
        part: String,
        /// Its length.
        len: usize,
        /// The index given.
        index: usize,
    },
    /// An item of a list that is not a table.
    #[error("{part}[{index}] is not a table")]
    NotATableItem {
        /// The list's key.
        part: String,
        /// The index given.
        index: usize,
    },
    /// A value where the path needs a table.
    #[error("{part} is a value, not a table")]
    NotATable {
        /// The value's key.
        part: String,
    },
}

fn set(table: &mut Table, path: &[String], value: &str) -> Result<(), SetError> {
    let (last, parents) = path.split_last().ok_or(SetError::EmptyKey)?;
    let mut node = table;
    for (depth, part) in parents.iter().enumerate() {
        let next_is_index = path
            .get(depth + 1)
            .is_some_and(|p| p.parse::<usize>().is_ok());
        let entry = node.entry(part.clone()).or_insert_with(|| {
            if next_is_index {
                Value::Array(Vec::new())
            } else {
                Value::Table(Table::new())
            }
        });
        node = match entry {
            Value::Table(t) => t,
            Value::Array(items) => {
                // The next part is the index; the table is the item.
                let Some(index) = path.get(depth + 1).and_then(|p| p.parse::<usize>().ok()) else {
                    return Err(SetError::NoIndex { part: part.clone() });
                };
                if index > items.len() {
                    return Err(SetError::Gap {
                        part: part.clone(),
                        len: items.len(),
                        index,
                    });
                }
                if index == items.len() {
                    items.push(Value::Table(Table::new()));
                }
                match &mut items[index] {
                    Value::Table(t) => {
                        // Skip the index part: continue below with its table.
                        return set(t, &path[depth + 2..], value);
                    }
                    _ => {
                        return Err(SetError::NotATableItem {
                            part: part.clone(),
                            index,
                        });
                    }
                }
            }
            _ => return Err(SetError::NotATable { part: part.clone() }),
        };
    }
    let typed = match node.get(last) {
        Some(Value::String(_)) => Value::String(value.to_owned()),
        _ => typed(value),
    };
    node.insert(last.clone(), typed);
    Ok(())
}

/// A number, boolean or array when the text reads as one in TOML, else a string.
fn typed(text: &str) -> Value {
    match toml::from_str::<Table>(&format!("v = {text}")) {
        Ok(mut table) => match table.remove("v") {
            Some(
                v @ (Value::Integer(_) | Value::Boolean(_) | Value::Array(_) | Value::Float(_)),
            ) => v,
            _ => Value::String(text.to_owned()),
        },
        Err(_) => Value::String(text.to_owned()),
    }
}
