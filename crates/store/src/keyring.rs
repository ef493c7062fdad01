//! Secrets at rest: the [`Keyring`] of AES-256-GCM keys (one primary for new writes, older
//! ones kept for reading rows written before a rotation).
//!
//! A sealed secret is stored as `key id` beside `nonce (12 bytes) || ciphertext || tag`. The
//! associated data binds each ciphertext to its row and column, so a ciphertext copied into
//! another row does not decrypt.

use std::fmt;

use base64::Engine as _;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

use crate::error::{Error, Result};

/// One AES-256-GCM key with the id stored beside every ciphertext it seals.
pub struct EncryptionKey {
    id: String,
    key: LessSafeKey,
}

impl EncryptionKey {
    /// A key from 32 raw bytes. The id follows the name rule: 1 to 64 characters of
    /// `A-Z a-z 0-9 . _ -`, starting with a letter or digit.
    pub fn from_bytes(id: &str, bytes: &[u8]) -> Result<Self> {
        validate_key_id(id)?;
        let unbound = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| Error::Config {
            reason: format!(
                "encryption key {id:?} is {} bytes; AES-256-GCM needs exactly 32",
                bytes.len()
            ),
        })?;
        Ok(Self {
            id: id.to_owned(),
            key: LessSafeKey::new(unbound),
        })
    }

    /// A key from standard base64 of 32 bytes (surrounding whitespace ignored), as held in a
    /// key file or an environment variable. Make one with `head -c 32 /dev/urandom | base64`.
    pub fn from_base64(id: &str, text: &str) -> Result<Self> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| Error::Config {
                reason: format!("encryption key {id:?} is not valid base64: {e}"),
            })?;
        Self::from_bytes(id, &bytes)
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptionKey")
            .field("id", &self.id)
            .field("key", &"[redacted]")
            .finish()
    }
}

/// The one name rule (a key id is kept beside every ciphertext it sealed, and read back from
/// configuration): 1 to 64 characters of `A-Z a-z 0-9 . _ -`, starting with a letter or digit.
fn validate_key_id(id: &str) -> Result<()> {
    scaleset_domain::check_name(id, 64).map_err(|error| Error::Config {
        reason: format!("encryption key id: {error}"),
    })
}

/// The keys secrets are sealed and opened with: one primary key (used for every new write)
/// and any number of older keys (used only to read rows sealed before a rotation).
#[derive(Debug)]
pub struct Keyring {
    primary: EncryptionKey,
    older: Vec<EncryptionKey>,
    rng: SystemRandom,
}

impl Keyring {
    /// A keyring whose new writes use `primary`.
    pub fn new(primary: EncryptionKey) -> Self {
        Self {
            primary,
            older: Vec::new(),
            rng: SystemRandom::new(),
        }
    }

    /// Adds an older key, kept to read rows sealed with it. Its id must differ from every
    /// key already in the ring.
    pub fn with_older_key(mut self, key: EncryptionKey) -> Result<Self> {
        if self.key(&key.id).is_some() {
            return Err(Error::Config {
                reason: format!(
                    "encryption key id {:?} appears twice in the keyring",
                    key.id
                ),
            });
        }
        self.older.push(key);
        Ok(self)
    }

    /// The id of the key new writes use.
    pub fn primary_id(&self) -> &str {
        &self.primary.id
    }

    fn key(&self, id: &str) -> Option<&EncryptionKey> {
        std::iter::once(&self.primary)
            .chain(&self.older)
            .find(|k| k.id == id)
    }

    /// Seals `plaintext` with the primary key; returns the key id and `nonce || ciphertext`.
    pub(crate) fn seal(
        &self,
        aad: &str,
        plaintext: &[u8],
        what: &str,
    ) -> Result<(String, Vec<u8>)> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| Error::Crypto {
            operation: "encrypt",
            what: what.to_owned(),
            reason: "the system random number generator failed".to_owned(),
        })?;
        let mut sealed = plaintext.to_vec();
        self.primary
            .key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| Error::Crypto {
                operation: "encrypt",
                what: what.to_owned(),
                reason: "AES-256-GCM sealing failed".to_owned(),
            })?;
        let mut blob = Vec::with_capacity(NONCE_LEN + sealed.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        Ok((self.primary.id.clone(), blob))
    }

    /// Opens what [`Keyring::seal`] produced.
    pub(crate) fn open(&self, key_id: &str, aad: &str, blob: &[u8], what: &str) -> Result<Vec<u8>> {
        let fail = |reason: String| Error::Crypto {
            operation: "decrypt",
            what: what.to_owned(),
            reason,
        };
        let key = self.key(key_id).ok_or_else(|| {
            fail(format!(
                "it was encrypted with key id {key_id:?}, which is not in the keyring \
                 (configured: {}); add that key as an older key",
                self.ids().join(", ")
            ))
        })?;
        let (nonce, sealed) = blob.split_first_chunk::<NONCE_LEN>().ok_or_else(|| {
            fail(format!(
                "the stored ciphertext is {} bytes, too short",
                blob.len()
            ))
        })?;
        let mut buffer = sealed.to_vec();
        let plaintext = key
            .key
            .open_in_place(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad.as_bytes()),
                &mut buffer,
            )
            .map_err(|_| {
                fail(format!(
                    "authentication failed with key id {key_id:?}: the configured key with that \
                     id is not the one the secret was encrypted with, or the row was altered; \
                     configure the original key under id {key_id:?}, or replace these credentials"
                ))
            })?;
        Ok(plaintext.to_vec())
    }

    fn ids(&self) -> Vec<&str> {
        std::iter::once(&self.primary)
            .chain(&self.older)
            .map(|k| k.id.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests;
