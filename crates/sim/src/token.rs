//! The simulator's bearer tokens: HS256 JWTs for the admin and message-queue tokens (GitHub
//! App JWTs are checked in [`crate::app_auth`]).
//!
//! Admin and queue tokens are signed with a key generated per simulator, carry `exp` (read by
//! clients without verification, as GitHub's are) and are checked against simulated time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde::{Deserialize, Serialize};

use crate::clock::SimTime;

/// What a token authorises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Grant {
    /// The Actions-service ("admin") API of one tenant.
    Admin {
        /// The tenant's scope key.
        scope: String,
    },
    /// The message queue of one session.
    Queue {
        /// The scale set the session belongs to.
        scale_set: i64,
        /// The session id.
        session: String,
    },
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    iss: String,
    iat: u64,
    nbf: u64,
    exp: u64,
    #[serde(flatten)]
    grant: Grant,
}

/// Why a presented token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a token this simulator signed.
    Invalid,
    /// Signed here, but `exp` is past in simulated time.
    Expired,
}

/// Signs and verifies the simulator's own tokens.
pub(crate) struct Signer {
    key: hmac::Key,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer([redacted])")
    }
}

impl Signer {
    /// A signer with a fresh random key.
    pub(crate) fn random() -> Self {
        let mut seed = [0u8; 32];
        for b in &mut seed {
            *b = fastrand::u8(..);
        }
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, &seed),
        }
    }

    /// Mints a token for `grant`, valid from `now` for `ttl`.
    pub(crate) fn mint(&self, grant: Grant, now: SimTime, ttl: std::time::Duration) -> String {
        let claims = Claims {
            iss: "scaleset-sim".to_owned(),
            iat: now.as_secs(),
            nbf: now.as_secs(),
            exp: now.plus(ttl).as_secs(),
            grant,
        };
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap_or_default());
        let signing_input = format!("{header}.{payload}");
        let tag = hmac::sign(&self.key, signing_input.as_bytes());
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// Checks a presented token and returns its grant.
    pub(crate) fn verify(&self, token: &str, now: SimTime) -> Result<Grant, Refusal> {
        let mut parts = token.rsplitn(2, '.');
        let (Some(sig), Some(signing_input)) = (parts.next(), parts.next()) else {
            return Err(Refusal::Invalid);
        };
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| Refusal::Invalid)?;
        hmac::verify(&self.key, signing_input.as_bytes(), &sig).map_err(|_| Refusal::Invalid)?;
        let payload = signing_input.split('.').nth(1).ok_or(Refusal::Invalid)?;
        let claims: Claims = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|raw| serde_json::from_slice(&raw).ok())
            .ok_or(Refusal::Invalid)?;
        if now.as_secs() >= claims.exp {
            return Err(Refusal::Expired);
        }
        Ok(claims.grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn minted_tokens_verify_until_they_expire() {
        let signer = Signer::random();
        let now = SimTime::from_millis(1_000_000);
        let grant = Grant::Admin {
            scope: "org:acme".to_owned(),
        };
        let token = signer.mint(grant.clone(), now, Duration::from_secs(60));
        assert_eq!(signer.verify(&token, now), Ok(grant));
        assert_eq!(
            signer.verify(&token, now.plus(Duration::from_secs(60))),
            Err(Refusal::Expired)
        );
        let other = Signer::random();
        assert_eq!(other.verify(&token, now), Err(Refusal::Invalid));
        assert_eq!(signer.verify("garbage", now), Err(Refusal::Invalid));
        assert_eq!(signer.verify("a.b.c", now), Err(Refusal::Invalid));
    }
}
