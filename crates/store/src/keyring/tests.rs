//! Unit tests of sealing, opening and key parsing.

use super::*;

fn key(id: &str, byte: u8) -> EncryptionKey {
    EncryptionKey::from_bytes(id, &[byte; 32]).unwrap()
}

#[test]
fn seal_then_open_round_trips_and_hides_the_plaintext() {
    let ring = Keyring::new(key("k1", 1));
    let (id, blob) = ring.seal("row-1", b"ghp_plaintext", "test").unwrap();
    assert_eq!(id, "k1");
    assert!(!blob.windows(13).any(|w| w == b"ghp_plaintext"));
    assert_eq!(
        ring.open(&id, "row-1", &blob, "test").unwrap(),
        b"ghp_plaintext"
    );
}

#[test]
fn associated_data_binds_the_ciphertext_to_its_row() {
    let ring = Keyring::new(key("k1", 1));
    let (id, blob) = ring.seal("row-1", b"secret", "test").unwrap();
    let err = ring.open(&id, "row-2", &blob, "test").unwrap_err();
    assert!(
        matches!(
            err,
            Error::Crypto {
                operation: "decrypt",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn truncated_ciphertext_is_an_error_not_a_panic() {
    let ring = Keyring::new(key("k1", 1));
    assert!(matches!(
        ring.open("k1", "a", &[1, 2, 3], "test"),
        Err(Error::Crypto { .. })
    ));
}

#[test]
fn key_parsing_rejects_bad_lengths_ids_and_base64() {
    assert!(EncryptionKey::from_bytes("k", &[0; 16]).is_err());
    assert!(EncryptionKey::from_bytes("bad id", &[0; 32]).is_err());
    assert!(EncryptionKey::from_bytes("", &[0; 32]).is_err());
    // The one name rule: a key id starts with a letter or digit, and its limit counts
    // characters.
    assert!(EncryptionKey::from_bytes("-k", &[0; 32]).is_err());
    assert!(EncryptionKey::from_bytes(&"k".repeat(64), &[0; 32]).is_ok());
    assert!(EncryptionKey::from_bytes(&"k".repeat(65), &[0; 32]).is_err());
    assert!(EncryptionKey::from_base64("k", "not base64!").is_err());
    let text = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    assert_eq!(
        EncryptionKey::from_base64("k-2026.01", &format!(" {text}\n"))
            .unwrap()
            .id(),
        "k-2026.01"
    );
}

#[test]
fn duplicate_key_ids_are_refused() {
    assert!(
        Keyring::new(key("k1", 1))
            .with_older_key(key("k1", 2))
            .is_err()
    );
}

#[test]
fn debug_output_redacts_keys_and_secrets() {
    let ring = Keyring::new(key("k1", 0xAB));
    let text = format!("{ring:?} {:?}", secrecy::SecretString::from("hunter2"));
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains("171"), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
    assert!(
        text.contains("[REDACTED]"),
        "the secret is redacted: {text}"
    );
}
