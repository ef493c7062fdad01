//! Pool identity: the key every provider instance is tagged with
//! (`GARM_POOL_ID`), and the pool context passed with instance operations.

use std::fmt;

use scaleset_domain::GithubScaleSetId;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The provider pool key: `<controller ID>_<GitHub scale-set ID>` (DESIGN §3).
///
/// The separator is `_` because providers store the key where `:` is refused: GCP label values
/// (lowercase letters, digits, `_`, `-`) and Kubernetes label values/selectors.
///
/// Derived from configuration and GitHub only, so instances are found again
/// after a database loss. It is passed to executables as `GARM_POOL_ID` and as
/// the bootstrap `pool_id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PoolKey(String);

impl PoolKey {
    /// The key of a scale set owned by `controller`.
    pub fn for_scale_set(controller: Uuid, scale_set_id: GithubScaleSetId) -> Self {
        Self(scaleset_domain::pool_key_text(controller, scale_set_id))
    }

    /// Accepts any key read back from a provider or a store: non-empty, no
    /// control characters (it travels in an environment variable).
    pub fn parse(text: &str) -> Result<Self, InvalidPoolKey> {
        if text.is_empty() || text.chars().any(char::is_control) {
            return Err(InvalidPoolKey {
                text: text.to_owned(),
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PoolKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for PoolKey {
    type Error = InvalidPoolKey;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<PoolKey> for String {
    fn from(key: PoolKey) -> Self {
        key.0
    }
}

/// A pool key that is empty or contains control characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid pool key {text:?}: it must be non-empty and free of control characters")]
pub struct InvalidPoolKey {
    /// The rejected text.
    pub text: String,
}

/// The pool an operation is about: its key and, for interface v0.1.1, the
/// extra specs passed base64-encoded in `GARM_POOL_EXTRASPECS`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// The pool key.
    pub key: PoolKey,
    /// Provider-specific JSON the operator configured for this pool, if any.
    pub extra_specs: Option<serde_json::Value>,
    /// The controller the pool's instances were created by, when it is not this one: a pool
    /// taken over from GARM is listed and its instances deleted with GARM's controller id in
    /// `GARM_CONTROLLER_ID` (providers may tag and filter by it). `None`: ours.
    pub controller_id: Option<Uuid>,
}

impl Pool {
    /// A pool without extra specs.
    pub fn new(key: PoolKey) -> Self {
        Self {
            key,
            extra_specs: None,
            controller_id: None,
        }
    }

    /// The pool of another controller (`controller_id`): see [`Pool::controller_id`].
    #[must_use]
    pub fn of_controller(mut self, controller_id: Uuid) -> Self {
        self.controller_id = Some(controller_id);
        self
    }

    /// Sets the extra specs.
    #[must_use]
    pub fn with_extra_specs(mut self, extra_specs: serde_json::Value) -> Self {
        self.extra_specs = Some(extra_specs);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_joins_the_lowercase_controller_id_and_scale_set_id_with_an_underscore() {
        let controller = Uuid::parse_str("0C0FFEE0-0000-4000-8000-000000000001").unwrap();
        let key = PoolKey::for_scale_set(controller, GithubScaleSetId(42));
        assert_eq!(key.as_str(), "0c0ffee0-0000-4000-8000-000000000001_42");
    }

    #[test]
    fn the_key_fits_gcp_label_values_and_kubernetes_label_values() {
        let key = PoolKey::for_scale_set(Uuid::from_u128(u128::MAX), GithubScaleSetId(i64::MAX));
        let text = key.as_str();
        // GCP: at most 63 of [a-z0-9_-]; Kubernetes: at most 63, alphanumeric at both ends.
        assert!(text.len() <= 63, "{text} is {} characters", text.len());
        assert!(
            text.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-'),
            "{text}"
        );
        assert!(text.starts_with(|c: char| c.is_ascii_alphanumeric()));
        assert!(text.ends_with(|c: char| c.is_ascii_alphanumeric()));
    }
}
