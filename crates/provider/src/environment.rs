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

/// The proxy variables GARM passes to every provider whatever its
/// `environment_variables` say; scaleset forwards them too unless the
/// operator turns that off (`forward_proxy_variables = false`).
pub const PROXY_VARIABLES: [&str; 6] = [
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
];

/// Which of the operator's variables an executable may see.
///
/// Entries follow GARM's `environment_variables` rule, so a GARM provider
/// block copied over passes the same variables: every entry is a **prefix**
/// (`OS_` passes `OS_AUTH_URL`, and `HTTPS_PROXY` also passes
/// `HTTPS_PROXY_USER`). A trailing `*` (`OS_*`) is accepted and means the
/// same. To pass one variable and nothing that merely starts like it, end the
/// entry with `=`: `HTTPS_PROXY=` passes `HTTPS_PROXY` only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvAllowList {
    names: Vec<String>,
    prefixes: Vec<String>,
}

impl EnvAllowList {
    /// Parses entries: `PREFIX` or `PREFIX*` allows every variable starting
    /// with `PREFIX` (GARM's rule), `NAME=` exactly that variable. Entries that
    /// could only match `GARM_*` names are refused (scaleset sets those), and
    /// so is a bare `*` (it would pass our whole environment through).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, Vec<String>> {
        let mut list = Self::default();
        let mut problems = Vec::new();
        for entry in entries {
            let entry = entry.as_ref();
            let (name, exact) = if let Some((name, value)) = entry.split_once('=') {
                if !value.is_empty() {
                    problems.push(format!(
                        "environment entry {entry:?} sets a value; `environment` only passes \
                         variables of scaleset's own environment through: write {name:?} (every \
                         variable starting with it) or \"{name}=\" (exactly that one)"
                    ));
                    continue;
                }
                (name, true)
            } else {
                (entry.strip_suffix('*').unwrap_or(entry), false)
            };
            if name.is_empty() {
                problems.push(format!(
                    "environment entry {entry:?} allows nothing or everything; name a variable \
                     prefix like \"OS_\" or an exact name like \"HTTPS_PROXY=\""
                ));
            } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                problems.push(format!(
                    "environment entry {entry:?} is not a variable name (letters, digits, '_'; a \
                     trailing '=' for one exact name)"
                ));
            } else if name.starts_with("GARM_") || (!exact && "GARM_".starts_with(name)) {
                problems.push(format!(
                    "environment entry {entry:?} would let GARM_* variables through; scaleset \
                     sets those itself"
                ));
            } else if exact {
                list.names.push(name.to_owned());
            } else {
                list.prefixes.push(name.to_owned());
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

/// What an external provider passes through from `source`: the allowed
/// variables and, when `forward_proxy` is set, the [`PROXY_VARIABLES`] that
/// are set (as GARM does), sorted by name and without duplicates.
pub(crate) fn passthrough(
    allow: &EnvAllowList,
    forward_proxy: bool,
    source: &dyn EnvSource,
) -> Vec<(String, String)> {
    let mut selected: Vec<(String, String)> = source
        .vars()
        .into_iter()
        .filter(|(name, _)| {
            allow.allows(name) || (forward_proxy && PROXY_VARIABLES.contains(&name.as_str()))
        })
        .collect();
    selected.sort();
    selected.dedup_by(|a, b| a.0 == b.0);
    selected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_and_prefixes_select_only_what_is_allowed() {
        let list = EnvAllowList::parse(&["HTTPS_PROXY=", "OS_*"]).unwrap();
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
    fn every_plain_entry_is_a_prefix_as_in_garm() {
        // GARM's own example: `["AWS_"]` passes every AWS_ variable, and a
        // full name passes the variables it is a prefix of too.
        let list = EnvAllowList::parse(&["AWS_", "HTTPS_PROXY", "OS_*"]).unwrap();
        for allowed in [
            "AWS_REGION",
            "AWS_SECRET_ACCESS_KEY",
            "HTTPS_PROXY",
            "HTTPS_PROXY_EXTRA",
            "OS_AUTH_URL",
        ] {
            assert!(list.allows(allowed), "{allowed}");
        }
        for refused in ["AWS", "HTTP_PROXY", "HOME", "GARM_COMMAND"] {
            assert!(!list.allows(refused), "{refused}");
        }
    }

    #[test]
    fn a_trailing_equals_asks_for_one_exact_name() {
        let list = EnvAllowList::parse(&["HTTPS_PROXY="]).unwrap();
        assert!(list.allows("HTTPS_PROXY"));
        assert!(!list.allows("HTTPS_PROXY_EXTRA"));
        // An exact name may share a start with GARM_ without being refused.
        assert!(EnvAllowList::parse(&["GA="]).unwrap().allows("GA"));
    }

    #[test]
    fn refuses_garm_names_bare_star_values_and_junk_reporting_all() {
        let problems = EnvAllowList::parse(&[
            "GARM_POOL_ID",
            "GARM_POOL_ID=",
            "GA*",
            "GA",
            "*",
            "",
            "=",
            "A=B",
            "A-B",
            "OK",
            "OK=",
        ])
        .unwrap_err();
        assert_eq!(problems.len(), 9, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("sets a value")),
            "{problems:?}"
        );
    }

    #[test]
    fn proxy_variables_are_forwarded_unless_turned_off() {
        let source: BTreeMap<String, String> = [
            ("http_proxy", "http://p:3128"),
            ("HTTPS_PROXY", "http://p:3128"),
            ("no_proxy", "localhost"),
            ("OS_CLOUD", "ci"),
            ("HOME", "/root"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let list = EnvAllowList::parse(&["OS_", "HTTPS_PROXY"]).unwrap();
        let names = |forward| -> Vec<String> {
            passthrough(&list, forward, &source)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(
            names(true),
            ["HTTPS_PROXY", "OS_CLOUD", "http_proxy", "no_proxy"]
        );
        assert_eq!(names(false), ["HTTPS_PROXY", "OS_CLOUD"]);
    }
}
