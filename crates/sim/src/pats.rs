//! The personal access tokens the simulator accepts: seeded from its configuration, added and
//! revoked while it runs (a rotation, as an operator does it on GitHub: create the new PAT,
//! hand it to the manager, revoke the old one), each with how often it was presented, so a
//! test proves from the simulator's side which token a client used and when it stopped.

use serde::Serialize;

use crate::config::PatSeed;

/// One PAT and what became of it.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatUse {
    /// The token text (the simulator's own, fake, tokens).
    pub token: String,
    /// How many REST calls presented it, before and after a revocation.
    pub uses: u64,
    /// Revoked: presenting it is answered 401 `Bad credentials`.
    pub revoked: bool,
}

impl std::fmt::Debug for PatUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PatUse")
            .field("token", &"[redacted]")
            .field("uses", &self.uses)
            .field("revoked", &self.revoked)
            .finish()
    }
}

/// The accepted and revoked PATs.
#[derive(Debug)]
pub(crate) struct Pats {
    tokens: Vec<(PatSeed, PatUse)>,
}

impl Pats {
    pub(crate) fn new(seeds: &[PatSeed]) -> Self {
        let mut pats = Self { tokens: Vec::new() };
        for seed in seeds {
            pats.add(seed.clone());
        }
        pats
    }

    /// Accepts `seed` from now on (again, if it was revoked; its count is kept).
    pub(crate) fn add(&mut self, seed: PatSeed) {
        if let Some((known, used)) = self.tokens.iter_mut().find(|(s, _)| s.token == seed.token) {
            *known = seed;
            used.revoked = false;
            return;
        }
        let used = PatUse {
            token: seed.token.clone(),
            uses: 0,
            revoked: false,
        };
        self.tokens.push((seed, used));
    }

    /// Refuses `token` from now on; false when no such PAT was ever accepted.
    pub(crate) fn revoke(&mut self, token: &str) -> bool {
        self.tokens
            .iter_mut()
            .find(|(s, _)| s.token == token)
            .map(|(_, used)| used.revoked = true)
            .is_some()
    }

    /// Counts one presentation of `token` and returns the PAT if it is accepted (a revoked
    /// PAT is counted too: that is what proves a client still sends it).
    pub(crate) fn presented(&mut self, token: &str) -> Option<PatSeed> {
        let (seed, used) = self.tokens.iter_mut().find(|(s, _)| s.token == token)?;
        used.uses += 1;
        (!used.revoked).then(|| seed.clone())
    }

    /// Every PAT ever accepted, in the order they were added.
    pub(crate) fn uses(&self) -> Vec<PatUse> {
        self.tokens.iter().map(|(_, used)| used.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(token: &str) -> PatSeed {
        PatSeed {
            token: token.to_owned(),
            scopes: Vec::new(),
        }
    }

    #[test]
    fn a_revoked_pat_is_refused_and_still_counted_and_a_new_one_accepted() {
        let mut pats = Pats::new(&[seed("old")]);
        assert!(pats.presented("old").is_some());
        assert!(pats.presented("new").is_none(), "not added yet");
        pats.add(seed("new"));
        assert!(pats.revoke("old"));
        assert!(!pats.revoke("never"));
        assert!(pats.presented("old").is_none());
        assert!(pats.presented("new").is_some());
        let uses = pats.uses();
        assert_eq!(
            uses.iter()
                .map(|u| (u.token.as_str(), u.uses, u.revoked))
                .collect::<Vec<_>>(),
            [("old", 2, true), ("new", 1, false)]
        );
        pats.add(seed("old"));
        assert!(pats.presented("old").is_some(), "accepted again");
        assert!(!format!("{:?}", pats.uses()).contains("old"));
    }
}
