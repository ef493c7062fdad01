//! Where the operator-allowed environment variables come from, and the
//! allow-list that selects them. Executables never inherit our environment.

use std::collections::{BTreeMap, HashMap};

/// A source of environment variables. Production reads the process
/// environment ([`ProcessEnv`]); tests pass a map.
pub trait EnvSource {
    /// Every variable in the source.
    fn vars(&self) -> Vec<(String, String)>;
}

/// The real process environment (variables whose name and value are UTF-8).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn vars(&self) -> Vec<(String, String)> {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect()
    }
}

impl EnvSource for BTreeMap<String, String> {
    fn vars(&self) -> Vec<(String, String)> {
        self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

impl<S: std::hash::BuildHasher> EnvSource for HashMap<String, String, S> {
    fn vars(&self) -> Vec<(String, String)> {
        self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

/// Which of the operator's variables an executable may see: exact names
/// (`"HTTPS_PROXY"`) and prefixes (`"OS_*"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvAllowList {
    names: Vec<String>,
    prefixes: Vec<String>,
}

impl EnvAllowList {
    /// Parses entries: `NAME` allows that variable, `PREFIX*` every variable
    /// starting with `PREFIX`. `GARM_*` names are refused (scaleset sets those),
    /// and so is a bare `*` (it would pass our whole environment through).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, Vec<String>> {
        let mut list = Self::default();
        let mut problems = Vec::new();
        for entry in entries {
            let entry = entry.as_ref();
            let (name, is_prefix) = match entry.strip_suffix('*') {
                Some(prefix) => (prefix, true),
                None => (entry, false),
            };
            if name.is_empty() {
                problems.push(format!(
                    "environment entry {entry:?} allows nothing or everything; name a variable or a prefix like \"OS_*\""
                ));
            } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                problems.push(format!(
                    "environment entry {entry:?} is not a variable name (letters, digits, '_'; a trailing '*' for a prefix)"
                ));
            } else if name.starts_with("GARM_") || (is_prefix && "GARM_".starts_with(name)) {
                problems.push(format!(
                    "environment entry {entry:?} would let GARM_* variables through; scaleset sets those itself"
                ));
            } else if is_prefix {
                list.prefixes.push(name.to_owned());
            } else {
                list.names.push(name.to_owned());
            }
        }
        if problems.is_empty() {
            Ok(list)
        } else {
            Err(problems)
        }
    }

    /// Whether a variable name is allowed.
    pub fn allows(&self, name: &str) -> bool {
        !name.starts_with("GARM_")
            && (self.names.iter().any(|n| n == name)
                || self.prefixes.iter().any(|p| name.starts_with(p.as_str())))
    }

    /// The allowed variables of `source`, sorted by name.
    pub fn select(&self, source: &dyn EnvSource) -> Vec<(String, String)> {
        let mut selected: Vec<(String, String)> = source
            .vars()
            .into_iter()
            .filter(|(name, _)| self.allows(name))
            .collect();
        selected.sort();
        selected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_and_prefixes_select_only_what_is_allowed() {
        let list = EnvAllowList::parse(&["HTTPS_PROXY", "OS_*"]).unwrap();
        let source: BTreeMap<String, String> = [
            ("HTTPS_PROXY", "p"),
            ("HTTPS_PROXY_EXTRA", "no"),
            ("OS_AUTH_URL", "u"),
            ("OS_PASSWORD", "pw"),
            ("HOME", "/root"),
            ("GARM_COMMAND", "smuggled"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let names: Vec<String> = list.select(&source).into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["HTTPS_PROXY", "OS_AUTH_URL", "OS_PASSWORD"]);
    }

    #[test]
    fn refuses_garm_names_bare_star_and_junk_reporting_all() {
        let problems =
            EnvAllowList::parse(&["GARM_POOL_ID", "GA*", "*", "", "A=B", "OK"]).unwrap_err();
        assert_eq!(problems.len(), 5, "{problems:?}");
    }
}
