//! GitHub Apps as GitHub checks them: an App's registered RSA public key, and the checks an
//! App JWT passes before `POST /app/installations/{id}/access_tokens` mints a token: the RS256
//! signature, and the `iat`, `exp` and `iss` claims.
//!
//! **Clock and skew (where this simulator chose).** The protocol reference (§3.1) says the
//! client back-dates `iat` by 60 s to absorb clock skew and sets `exp = iat + 9 min`; GitHub's
//! documentation says `exp` may be at most 10 minutes in the future. GitHub answers a JWT whose
//! `iat` lies in its future (a client clock running ahead by more than the client's back-dating)
//! and one whose `exp` is more than 10 minutes ahead, so this simulator allows no further skew:
//! `iat ≤ now`, `now < exp ≤ now + 10 min`. `now` is the **wall clock**, not simulated time:
//! the client signs with its own clock, which advancing simulated time does not move. What the
//! simulator issues (installation tokens, 1 h) expires in simulated time, so moving time past
//! it makes the client fetch a new one.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

/// The longest validity GitHub accepts for an App JWT: `exp` at most this far after now.
pub(crate) const MAX_JWT_VALIDITY_SECS: u64 = 10 * 60;

/// A GitHub App's RSA public key (PKCS#1 `RSAPublicKey`, DER), against which the signatures of
/// its JWTs are checked.
#[derive(Clone, PartialEq, Eq)]
pub struct AppPublicKey {
    pkcs1_der: Vec<u8>,
}

impl std::fmt::Debug for AppPublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AppPublicKey({} bytes)", self.pkcs1_der.len())
    }
}

impl AppPublicKey {
    /// A key from its PKCS#1 `RSAPublicKey` DER (what `ring`'s `RsaKeyPair::public()` gives).
    pub fn from_pkcs1_der(der: impl Into<Vec<u8>>) -> Self {
        Self {
            pkcs1_der: der.into(),
        }
    }

    /// Parses a PEM public key: `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo, what
    /// `openssl rsa -pubout` writes) or `-----BEGIN RSA PUBLIC KEY-----` (PKCS#1).
    ///
    /// # Errors
    ///
    /// [`KeyError`] saying what is wrong with the text.
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        let (label, der) = pem_block(pem)?;
        match label.as_str() {
            "RSA PUBLIC KEY" => Ok(Self::from_pkcs1_der(der)),
            "PUBLIC KEY" => spki_rsa_key(&der).map(Self::from_pkcs1_der),
            other => Err(KeyError::NotAPublicKey {
                label: other.to_owned(),
            }),
        }
    }

    /// The public half of a PEM RSA private key (`RSA PRIVATE KEY` or `PRIVATE KEY`): for
    /// tests and demos that hold the App's private key and register the App with its public
    /// key.
    ///
    /// # Errors
    ///
    /// [`KeyError`] saying what is wrong with the text.
    pub fn of_private_key_pem(pem: &str) -> Result<Self, KeyError> {
        use ring::signature::{KeyPair as _, RsaKeyPair};
        let (label, der) = pem_block(pem)?;
        let pair = match label.as_str() {
            "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der),
            "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der),
            other => {
                return Err(KeyError::NotAPrivateKey {
                    label: other.to_owned(),
                });
            }
        }
        .map_err(|e| KeyError::UnusablePrivateKey {
            reason: e.to_string(),
        })?;
        Ok(Self::from_pkcs1_der(pair.public_key().as_ref().to_vec()))
    }

    /// The key as PEM (`RSA PUBLIC KEY`, PKCS#1).
    pub fn to_pem(&self) -> String {
        let body = STANDARD.encode(&self.pkcs1_der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        format!(
            "-----BEGIN RSA PUBLIC KEY-----\n{}\n-----END RSA PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, &self.pkcs1_der)
            .verify(message, signature)
            .is_ok()
    }
}

/// The first PEM block of `text`: its label and decoded body.
fn pem_block(text: &str) -> Result<(String, Vec<u8>), KeyError> {
    let start = text.find("-----BEGIN ").ok_or(KeyError::NoPem)?;
    let rest = &text[start + "-----BEGIN ".len()..];
    let (label, rest) = rest.split_once("-----").ok_or(KeyError::UnclosedBegin)?;
    let end_marker = format!("-----END {label}-----");
    let body = rest
        .split_once(&end_marker)
        .map(|(body, _)| body)
        .ok_or_else(|| KeyError::NoEnd {
            label: label.to_owned(),
        })?;
    let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD
        .decode(compact)
        .map_err(|source| KeyError::NotBase64 {
            label: label.to_owned(),
            source,
        })?;
    Ok((label.to_owned(), der))
}

/// One DER element: (tag, content, rest after it).
fn der_element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let octets = usize::from(first & 0x7f);
        if octets == 0 || octets > 4 || rest.len() < octets {
            return None;
        }
        let len = rest[..octets]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[octets..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The PKCS#1 key inside a SubjectPublicKeyInfo of algorithm `rsaEncryption`.
fn spki_rsa_key(der: &[u8]) -> Result<Vec<u8>, KeyError> {
    const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    let malformed = || KeyError::MalformedSpki;
    let (0x30, spki, _) = der_element(der).ok_or_else(malformed)? else {
        return Err(malformed());
    };
    let (0x30, algorithm, rest) = der_element(spki).ok_or_else(malformed)? else {
        return Err(malformed());
    };
    let (0x06, oid, _) = der_element(algorithm).ok_or_else(malformed)? else {
        return Err(malformed());
    };
    if oid != RSA_ENCRYPTION {
        return Err(KeyError::NotRsa);
    }
    let (0x03, bits, _) = der_element(rest).ok_or_else(malformed)? else {
        return Err(malformed());
    };
    match bits.split_first() {
        Some((0, key)) => Ok(key.to_vec()),
        _ => Err(malformed()),
    }
}

/// What is wrong with an App key's PEM text ([`AppPublicKey::from_pem`],
/// [`AppPublicKey::of_private_key_pem`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No `-----BEGIN …-----` line.
    #[error("no PEM block (-----BEGIN …-----) found")]
    NoPem,
    /// The BEGIN line does not end with `-----`.
    #[error("the PEM BEGIN line is not closed with -----")]
    UnclosedBegin,
    /// No END line for the block's label.
    #[error("no -----END {label}----- line")]
    NoEnd {
        /// The block's label.
        label: String,
    },
    /// The body is not base64.
    #[error("the {label} PEM body is not base64")]
    NotBase64 {
        /// The block's label.
        label: String,
        /// The decoder's error.
        #[source]
        source: base64::DecodeError,
    },
    /// A block that is not a public key where one is needed.
    #[error(
        "a {label:?} PEM block is not a public key: give the App's public key (BEGIN PUBLIC KEY \
         or BEGIN RSA PUBLIC KEY; `openssl rsa -in app.pem -pubout` writes one)"
    )]
    NotAPublicKey {
        /// The block's label.
        label: String,
    },
    /// A block that is not an RSA private key where one is needed.
    #[error("a {label:?} PEM block is not an RSA private key")]
    NotAPrivateKey {
        /// The block's label.
        label: String,
    },
    /// ring refused the private key.
    #[error("not a usable RSA private key: {reason}")]
    UnusablePrivateKey {
        /// ring's words.
        reason: String,
    },
    /// The PUBLIC KEY block is not a SubjectPublicKeyInfo.
    #[error("the PUBLIC KEY is not a valid SubjectPublicKeyInfo")]
    MalformedSpki,
    /// The PUBLIC KEY is of another algorithm.
    #[error("the PUBLIC KEY is not an RSA key (GitHub App keys are RSA)")]
    NotRsa,
}

/// Why an App JWT was refused: each is GitHub's 401 with its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JwtRefusal {
    /// Not a JWT, not RS256, or the signature does not verify with the App's key (GitHub says
    /// the same for a key that belongs to another App).
    Undecodable,
    /// `exp` missing or not in the future.
    Expired,
    /// `exp` more than 10 minutes ahead.
    TooLong,
    /// `iat` missing or in the future.
    IssuedInFuture,
    /// `iss` names no App the simulator knows.
    UnknownApp,
}

impl JwtRefusal {
    /// GitHub's message for the refusal.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Undecodable => "A JSON web token could not be decoded",
            Self::Expired => {
                "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
            }
            Self::TooLong => "'Expiration time' claim ('exp') is too far in the future",
            Self::IssuedInFuture => {
                "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
            }
            Self::UnknownApp => "Integration not found",
        }
    }
}

/// A registered App, as the check sees it.
pub(crate) struct KnownApp<'a> {
    /// The App id and, if any, its client id: either may be the JWT's `iss`.
    pub(crate) ids: [Option<&'a str>; 2],
    /// Its public key; `None`: the App is known (an installation names it) but has no
    /// registered key, so its signatures are not checked.
    pub(crate) key: Option<&'a AppPublicKey>,
}

/// The checked claims of an App JWT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppJwtClaims {
    /// `iss`, as a string.
    pub(crate) issuer: String,
    iat: Option<u64>,
    exp: Option<u64>,
}

/// Decodes the header and payload of an App JWT (no signature check); `None` when it is not a
/// JWT signed with RS256 whose `iss` is a string or a number.
pub(crate) fn decode(token: &str) -> Option<(AppJwtClaims, String, Vec<u8>)> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let json = |part: &str| -> Option<serde_json::Value> {
        let raw = URL_SAFE_NO_PAD.decode(part.trim_end_matches('=')).ok()?;
        serde_json::from_slice(&raw).ok()
    };
    let header = json(header)?;
    if header.get("alg")?.as_str()? != "RS256" {
        return None;
    }
    let claims = json(payload)?;
    let issuer = match claims.get("iss")? {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let integer = |name: &str| claims.get(name).and_then(serde_json::Value::as_u64);
    let signature = URL_SAFE_NO_PAD
        .decode(signature.trim_end_matches('='))
        .ok()?;
    let signing_input = token.rsplit_once('.').map(|(input, _)| input.to_owned())?;
    Some((
        AppJwtClaims {
            issuer,
            iat: integer("iat"),
            exp: integer("exp"),
        },
        signing_input,
        signature,
    ))
}

/// Checks an App JWT as GitHub does, against `apps` and the wall-clock time `now` (seconds
/// since the epoch); returns its issuer.
pub(crate) fn check(token: &str, apps: &[KnownApp<'_>], now: u64) -> Result<String, JwtRefusal> {
    let (claims, signing_input, signature) = decode(token).ok_or(JwtRefusal::Undecodable)?;
    let app = apps
        .iter()
        .find(|a| a.ids.iter().flatten().any(|id| *id == claims.issuer))
        .ok_or(JwtRefusal::UnknownApp)?;
    if let Some(key) = app.key
        && !key.verifies(signing_input.as_bytes(), &signature)
    {
        return Err(JwtRefusal::Undecodable);
    }
    match claims.iat {
        Some(iat) if iat <= now => {}
        _ => return Err(JwtRefusal::IssuedInFuture),
    }
    match claims.exp {
        Some(exp) if exp <= now => Err(JwtRefusal::Expired),
        Some(exp) if exp - now > MAX_JWT_VALIDITY_SECS => Err(JwtRefusal::TooLong),
        Some(_) => Ok(claims.issuer),
        None => Err(JwtRefusal::Expired),
    }
}

#[cfg(test)]
mod tests;
