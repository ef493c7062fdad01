//! Scopes (tenants): an organization, a repository or an enterprise, parsed from a config-URL
//! path the way GitHub's clients parse it. Logins and slugs compare case-insensitively, as on
//! GitHub.

use std::fmt;

/// Where runners register: the tenant whose scale sets, groups and agents are separate from
/// every other tenant's.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub(crate) enum Scope {
    /// An organization login.
    Organization(String),
    /// A repository `owner/name`.
    Repository {
        /// The owner login.
        owner: String,
        /// The repository name.
        name: String,
    },
    /// An enterprise slug.
    Enterprise(String),
}

impl Scope {
    /// Parses `org`, `owner/repo` or `enterprises/slug` (slashes trimmed); lowercases it.
    pub(crate) fn parse_path(path: &str) -> Option<Self> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        match segments.as_slice() {
            [org] if !org.is_empty() => Some(Self::Organization(org.to_lowercase())),
            [first, slug] if first.eq_ignore_ascii_case("enterprises") && !slug.is_empty() => {
                Some(Self::Enterprise(slug.to_lowercase()))
            }
            [owner, name] if !owner.is_empty() && !name.is_empty() => Some(Self::Repository {
                owner: owner.to_lowercase(),
                name: name.to_lowercase(),
            }),
            _ => None,
        }
    }

    /// Parses the path of a full config URL (`https://github.com/acme`).
    pub(crate) fn parse_url(config_url: &str) -> Option<Self> {
        let url = url::Url::parse(config_url.trim_matches('/')).ok()?;
        let path = percent_decode(url.path());
        Self::parse_path(&path)
    }

    /// The account (organization or repository owner) an App installation must cover.
    pub(crate) fn account(&self) -> Option<&str> {
        match self {
            Self::Organization(org) => Some(org),
            Self::Repository { owner, .. } => Some(owner),
            Self::Enterprise(_) => None,
        }
    }
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("p={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Organization(org) => f.write_str(org),
            Self::Repository { owner, name } => write!(f, "{owner}/{name}"),
            Self::Enterprise(slug) => write!(f, "enterprises/{slug}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_scopes_like_the_clients() {
        assert_eq!(
            Scope::parse_path("Acme"),
            Some(Scope::Organization("acme".to_owned()))
        );
        assert_eq!(
            Scope::parse_path("/acme/Widgets/"),
            Some(Scope::Repository {
                owner: "acme".to_owned(),
                name: "widgets".to_owned()
            })
        );
        assert_eq!(
            Scope::parse_path("Enterprises/big"),
            Some(Scope::Enterprise("big".to_owned()))
        );
        assert_eq!(Scope::parse_path("a/b/c"), None);
        assert_eq!(Scope::parse_path(""), None);
        assert_eq!(
            Scope::parse_url("http://127.0.0.1:9/enterprises/big/").map(|s| s.to_string()),
            Some("enterprises/big".to_owned())
        );
    }
}
