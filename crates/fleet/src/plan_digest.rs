//! The digest a fleet or decommission plan is reviewed by, here because the loop's error
//! names it when an apply refuses a stale plan.

use std::fmt;

/// A stable hash of a plan's data (every step's action, changes and reason — the reason's code
/// and data, not its words): apply re-plans and refuses when the digest differs, so it does
/// exactly what was reviewed, and a new version that only rewords a message does not make a
/// reviewed plan stale. Shown as 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlanDigest(String);

impl PlanDigest {
    /// The hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The digest of a finished SHA-256 hash, as hex.
    pub fn from_sha256(hash: &[u8]) -> Self {
        Self(hash.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Parses a digest shown by a plan; `None` unless it is 64 lowercase hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        (text.len() == 64
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| Self(text.to_owned()))
    }
}

impl fmt::Display for PlanDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
