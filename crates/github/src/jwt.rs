//! JSON Web Tokens: signing the GitHub App JWT with RS256 (protocol §3.1) and reading the
//! unverified `exp` claim of the admin token (protocol §3.6).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject as _;

use crate::error::{Error, Result};
use secrecy::{ExposeSecret, SecretString};

/// The App JWT is back-dated by this much to absorb clock skew.
const BACKDATE: Duration = Duration::from_secs(60);
/// The App JWT is valid this long after its `iat`.
const LIFETIME: Duration = Duration::from_secs(9 * 60);

/// A parsed GitHub App private key.
pub(crate) struct AppKey {
    key: RsaKeyPair,
    rng: SystemRandom,
}

impl AppKey {
    /// Parses a PEM RSA key in PKCS#1 (`RSA PRIVATE KEY`) or PKCS#8 (`PRIVATE KEY`) form.
    pub(crate) fn from_pem(pem: &SecretString) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidPrivateKey { reason };
        let der = PrivateKeyDer::from_pem_slice(pem.expose_secret().as_bytes())
            .map_err(|e| invalid(format!("not a PEM private key ({e})")))?;
        let key = match &der {
            PrivateKeyDer::Pkcs1(pkcs1) => RsaKeyPair::from_der(pkcs1.secret_pkcs1_der()),
            PrivateKeyDer::Pkcs8(pkcs8) => RsaKeyPair::from_pkcs8(pkcs8.secret_pkcs8_der()),
            _ => {
                return Err(invalid(
                    "the key must be an RSA key (PKCS#1 or PKCS#8)".to_owned(),
                ));
            }
        }
        .map_err(|e| invalid(format!("rejected RSA key: {e}")))?;
        Ok(Self {
            key,
            rng: SystemRandom::new(),
        })
    }

    /// Signs an App JWT: `iat = now - 60 s`, `exp = iat + 9 min`, `iss = issuer`.
    pub(crate) fn sign(&self, issuer: &str, now: SystemTime) -> Result<SecretString> {
        let iat = unix_seconds(now.checked_sub(BACKDATE).unwrap_or(UNIX_EPOCH));
        let exp = iat + LIFETIME.as_secs() as i64;
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        let claims = serde_json::json!({ "iat": iat, "exp": exp, "iss": issuer });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string().as_bytes());
        let signing_input = format!("{header}.{claims}");
        let mut signature = vec![0u8; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &self.rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| Error::JwtSigning)?;
        Ok(SecretString::from(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(&signature)
        )))
    }
}

/// The fingerprint GitHub shows beside each private key on an App's settings page: `SHA256:`
/// and the base64 SHA-256 of the public key's SubjectPublicKeyInfo DER (what `openssl rsa -in
/// key.pem -pubout -outform DER | openssl sha256 -binary | openssl base64` prints). Parsing the
/// key here is the same parsing the token chain does, so a key this accepts is one the client
/// can sign with.
///
/// # Errors
///
/// [`Error::InvalidPrivateKey`] when the text is not a PEM RSA private key.
pub fn app_key_fingerprint(pem: &SecretString) -> Result<String> {
    use ring::signature::KeyPair as _;
    // SubjectPublicKeyInfo = SEQUENCE { AlgorithmIdentifier rsaEncryption NULL, BIT STRING }.
    fn der(tag: u8, content: &[u8]) -> Vec<u8> {
        let len = content.len();
        let mut out = vec![tag];
        match len {
            0..0x80 => out.push(len as u8),
            0x80..0x100 => out.extend([0x81, len as u8]),
            _ => out.extend([0x82, (len >> 8) as u8, len as u8]),
        }
        out.extend_from_slice(content);
        out
    }
    const RSA_ALGORITHM: [u8; 15] = [
        0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let key = AppKey::from_pem(pem)?;
    let mut bits = vec![0u8];
    bits.extend_from_slice(key.key.public_key().as_ref());
    let mut body = RSA_ALGORITHM.to_vec();
    body.extend(der(0x03, &bits));
    let spki = der(0x30, &body);
    let digest = ring::digest::digest(&ring::digest::SHA256, &spki);
    Ok(format!(
        "SHA256:{}",
        base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
    ))
}

fn unix_seconds(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Reads the `exp` claim of a JWT without verifying its signature. `None` when the token is not
/// a JWT or has no numeric `exp`.
pub fn unverified_expiry(token: &str) -> Option<SystemTime> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .or_else(|_| URL_SAFE.decode(payload))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?;
    let seconds = exp
        .as_i64()
        .or_else(|| exp.as_f64().map(|f| f as i64))
        .or_else(|| exp.as_str().and_then(|s| s.trim().parse::<i64>().ok()))?;
    if seconds < 0 {
        return None;
    }
    UNIX_EPOCH.checked_add(Duration::from_secs(seconds as u64))
}
