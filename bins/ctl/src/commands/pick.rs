//! Naming a resource on the command line: a full id, a name, or a unique id prefix (tables
//! show the first 8 characters). The choice among listed items is pure, so it is unit-tested.

use anyhow::{Result, bail};
use uuid::Uuid;

/// One listed item, as `pick` sees it.
pub(crate) struct Candidate {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its name.
    pub(crate) name: String,
    /// How to tell it apart when a name matches several (`organization acme`).
    pub(crate) describe: String,
}

/// The full id when `wanted` is one (no listing needed).
pub(crate) fn full_id(wanted: &str) -> Option<Uuid> {
    Uuid::parse_str(wanted.trim()).ok()
}

/// The candidate `wanted` names: an exact name first, then a unique id prefix (at least 4 hex
/// digits; dashes ignored). `what` names the resource in messages (`scale set`), `list` the
/// command that lists them.
pub(crate) fn pick(what: &str, list: &str, wanted: &str, candidates: &[Candidate]) -> Result<Uuid> {
    let wanted = wanted.trim();
    if let Some(id) = full_id(wanted)
        && candidates.iter().any(|c| c.id == id)
    {
        return Ok(id);
    }
    let by_name: Vec<&Candidate> = candidates.iter().filter(|c| c.name == wanted).collect();
    match by_name.as_slice() {
        [one] => return Ok(one.id),
        [] => {}
        many => bail!(
            "{} {what}s are named {wanted:?}: {}; give the id instead",
            many.len(),
            describe(many)
        ),
    }
    let prefix: String = wanted.chars().filter(|c| *c != '-').collect();
    if prefix.len() >= 4 && prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        let prefix = prefix.to_ascii_lowercase();
        let by_id: Vec<&Candidate> = candidates
            .iter()
            .filter(|c| c.id.simple().to_string().starts_with(&prefix))
            .collect();
        match by_id.as_slice() {
            [one] => return Ok(one.id),
            [] => {}
            many => bail!(
                "the id prefix {wanted:?} matches {} {what}s: {}; give more of the id",
                many.len(),
                describe(many)
            ),
        }
    }
    let nearest = nearest(wanted, candidates.iter().map(|c| c.name.as_str()));
    Err(NotFound {
        message: match nearest {
            Some(name) => format!(
                "no {what} is named {wanted:?} or has an id starting with it; did you mean \
                 {name:?}? `{list}` lists them"
            ),
            None => format!(
                "no {what} is named {wanted:?} or has an id starting with it; `{list}` lists them"
            ),
        },
    }
    .into())
}

/// No listed item is the one named (`-o json` answers it as `not_found`).
#[derive(Debug)]
pub(crate) struct NotFound {
    message: String,
}

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NotFound {}

/// The stored name closest to `wanted` when it is close enough to be a typo: at most a third
/// of its characters (and at least one, at most three) edited, case ignored.
fn nearest<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = wanted.to_lowercase();
    let bound = (wanted.chars().count() / 3).clamp(1, 3);
    names
        .map(|name| (distance(&wanted, &name.to_lowercase()), name))
        .filter(|(d, _)| *d <= bound)
        .min_by_key(|(d, name)| (*d, *name))
        .map(|(_, name)| name)
}

/// The Levenshtein distance (insertions, deletions, substitutions), by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn describe(many: &[&Candidate]) -> String {
    many.iter()
        .map(|c| format!("{} ({})", c.id, c.describe))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, name: &str) -> Candidate {
        Candidate {
            id: id.parse().unwrap(),
            name: name.to_owned(),
            describe: format!("in {name}-org"),
        }
    }

    fn set() -> Vec<Candidate> {
        vec![
            candidate("aaaa1111-0000-4000-8000-000000000001", "linux"),
            candidate("aaaa2222-0000-4000-8000-000000000002", "linux"),
            candidate("bbbb3333-0000-4000-8000-000000000003", "mac"),
            candidate("cccc4444-0000-4000-8000-000000000004", "aaaa1111"),
        ]
    }

    #[test]
    fn a_name_an_id_or_a_prefix() {
        let set = set();
        let mac: Uuid = "bbbb3333-0000-4000-8000-000000000003".parse().unwrap();
        assert_eq!(pick("scale set", "ls", "mac", &set).unwrap(), mac);
        assert_eq!(pick("scale set", "ls", "bbbb", &set).unwrap(), mac);
        assert_eq!(pick("scale set", "ls", "BBBB-33", &set).unwrap(), mac);
        assert_eq!(
            pick("scale set", "ls", &mac.to_string(), &set).unwrap(),
            mac
        );
    }

    #[test]
    fn a_name_wins_over_an_id_prefix() {
        let got = pick("scale set", "ls", "aaaa1111", &set()).unwrap();
        assert_eq!(got.to_string(), "cccc4444-0000-4000-8000-000000000004");
    }

    #[test]
    fn ambiguity_and_absence_are_errors_that_say_what_to_do() {
        let set = set();
        let e = pick("scale set", "scalesetctl scale-set list", "linux", &set)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("2 scale sets are named \"linux\"") && e.contains("give the id"),
            "{e}"
        );
        assert!(
            e.contains("aaaa1111-0000-4000-8000-000000000001 (in linux-org)"),
            "{e}"
        );
        let e = pick("scale set", "ls", "aaaa", &set)
            .unwrap_err()
            .to_string();
        assert!(e.contains("matches 2 scale sets"), "{e}");
        let e = pick("scale set", "scalesetctl scale-set list", "win", &set)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no scale set is named \"win\"") && e.contains("scale-set list"),
            "{e}"
        );
        // Short prefixes are not ids.
        assert!(pick("scale set", "ls", "bbb", &set).is_err());
    }

    #[test]
    fn a_mistyped_name_is_answered_with_the_nearest_stored_one() {
        let e = pick("scale set", "ls", "linx", &set()).unwrap_err();
        assert!(e.downcast_ref::<NotFound>().is_some(), "{e}");
        assert!(e.to_string().contains("did you mean \"linux\"?"), "{e}");
        let e = pick("scale set", "ls", "MAC", &set())
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean \"mac\"?"), "{e}");
        let e = pick("scale set", "ls", "windows", &set())
            .unwrap_err()
            .to_string();
        assert!(!e.contains("did you mean"), "nothing is near: {e}");
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
