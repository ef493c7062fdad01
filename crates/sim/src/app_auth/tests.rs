use super::*;
use ring::rand::SystemRandom;
use ring::signature::{KeyPair as _, RSA_PKCS1_SHA256, RsaKeyPair};

const APP_KEY: &str = include_str!("../../tests/conformance/app-key.pem");
const OTHER_KEY: &str = include_str!("../../tests/conformance/other-app-key.pem");
const NOW: u64 = 1_800_000_000;

fn key_pair(pem: &str) -> RsaKeyPair {
    let (label, der) = pem_block(pem).expect("test key");
    match label.as_str() {
        "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der),
        _ => RsaKeyPair::from_der(&der),
    }
    .expect("RSA key")
}

fn public(pem: &str) -> AppPublicKey {
    AppPublicKey::from_pkcs1_der(key_pair(pem).public_key().as_ref().to_vec())
}

fn jwt(pem: &str, claims: &serde_json::Value) -> String {
    let pair = key_pair(pem);
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut sig = vec![0; pair.public().modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .expect("sign");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

/// What the scaleset client sends: `iat = now − 60`, `exp = iat + 9 min`.
fn client_claims(iss: &str) -> serde_json::Value {
    serde_json::json!({"iat": NOW - 60, "exp": NOW + 480, "iss": iss})
}

fn check_with(key: &AppPublicKey, token: &str) -> Result<String, JwtRefusal> {
    let apps = [KnownApp {
        ids: [Some("7"), Some("Iv1.seven")],
        key: Some(key),
    }];
    check(token, &apps, NOW)
}

#[test]
fn a_jwt_signed_with_the_apps_key_passes_by_app_id_or_client_id() {
    let key = public(APP_KEY);
    for iss in ["7", "Iv1.seven"] {
        assert_eq!(
            check_with(&key, &jwt(APP_KEY, &client_claims(iss))),
            Ok(iss.to_owned())
        );
    }
    // A numeric `iss` is the App id too.
    let numeric = serde_json::json!({"iat": NOW - 60, "exp": NOW + 480, "iss": 7});
    assert_eq!(
        check_with(&key, &jwt(APP_KEY, &numeric)),
        Ok("7".to_owned())
    );
}

#[test]
fn a_jwt_signed_with_another_key_is_refused() {
    let token = jwt(OTHER_KEY, &client_claims("7"));
    assert_eq!(
        check_with(&public(APP_KEY), &token),
        Err(JwtRefusal::Undecodable)
    );
    // A tampered payload under a valid signature is refused the same way.
    let good = jwt(APP_KEY, &client_claims("7"));
    let parts: Vec<&str> = good.split('.').collect();
    let forged_claims = serde_json::json!({"iat": NOW - 60, "exp": NOW + 480, "iss": "Iv1.seven"});
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(forged_claims.to_string()),
        parts[2]
    );
    assert_eq!(
        check_with(&public(APP_KEY), &forged),
        Err(JwtRefusal::Undecodable)
    );
}

#[test]
fn time_claims_are_checked_without_extra_skew() {
    let key = public(APP_KEY);
    let case = |iat: Option<u64>, exp: Option<u64>| {
        let mut claims = serde_json::json!({"iss": "7"});
        if let Some(iat) = iat {
            claims["iat"] = iat.into();
        }
        if let Some(exp) = exp {
            claims["exp"] = exp.into();
        }
        check_with(&key, &jwt(APP_KEY, &claims))
    };
    assert_eq!(
        case(Some(NOW - 660), Some(NOW - 60)),
        Err(JwtRefusal::Expired)
    );
    assert_eq!(case(Some(NOW - 60), Some(NOW)), Err(JwtRefusal::Expired));
    assert_eq!(case(Some(NOW - 60), None), Err(JwtRefusal::Expired));
    assert_eq!(
        case(Some(NOW + 1), Some(NOW + 300)),
        Err(JwtRefusal::IssuedInFuture)
    );
    assert_eq!(case(None, Some(NOW + 300)), Err(JwtRefusal::IssuedInFuture));
    assert_eq!(case(Some(NOW), Some(NOW + 601)), Err(JwtRefusal::TooLong));
    assert_eq!(case(Some(NOW), Some(NOW + 600)), Ok("7".to_owned()));
    assert_eq!(case(Some(NOW), Some(NOW + 1)), Ok("7".to_owned()));
}

#[test]
fn an_unknown_issuer_or_a_non_rs256_token_is_refused() {
    let key = public(APP_KEY);
    assert_eq!(
        check_with(&key, &jwt(APP_KEY, &client_claims("8"))),
        Err(JwtRefusal::UnknownApp)
    );
    let none_alg = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(client_claims("7").to_string())
    );
    assert_eq!(check_with(&key, &none_alg), Err(JwtRefusal::Undecodable));
    assert_eq!(check_with(&key, "a.b.c"), Err(JwtRefusal::Undecodable));
    assert_eq!(check_with(&key, "nonsense"), Err(JwtRefusal::Undecodable));
}

#[test]
fn an_app_without_a_registered_key_is_not_signature_checked() {
    let apps = [KnownApp {
        ids: [Some("7"), None],
        key: None,
    }];
    let token = jwt(OTHER_KEY, &client_claims("7"));
    assert_eq!(check(&token, &apps, NOW), Ok("7".to_owned()));
}

#[test]
fn public_keys_parse_from_pkcs1_and_spki_pem() {
    let key = public(APP_KEY);
    assert_eq!(AppPublicKey::from_pem(&key.to_pem()), Ok(key.clone()));
    // SubjectPublicKeyInfo, as `openssl rsa -pubout` writes it: the PKCS#1 key wrapped with
    // the rsaEncryption algorithm identifier.
    let mut bit_string = vec![0u8];
    bit_string.extend_from_slice(&key.pkcs1_der);
    let algorithm = [
        0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let mut body = algorithm.to_vec();
    body.extend(der(0x03, &bit_string));
    let spki = der(0x30, &body);
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        STANDARD.encode(spki)
    );
    assert_eq!(AppPublicKey::from_pem(&pem), Ok(key));
    assert_eq!(
        AppPublicKey::from_pem(APP_KEY),
        Err(KeyError::NotAPublicKey {
            label: "PRIVATE KEY".to_owned()
        }),
        "a private key is not a public key"
    );
    assert_eq!(
        AppPublicKey::of_private_key_pem(APP_KEY),
        Ok(public(APP_KEY))
    );
    assert_eq!(
        AppPublicKey::of_private_key_pem(OTHER_KEY),
        Ok(public(OTHER_KEY))
    );
    assert_eq!(AppPublicKey::from_pem("no pem here"), Err(KeyError::NoPem));
    assert_eq!(
        AppPublicKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"),
        Err(KeyError::MalformedSpki)
    );
}

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        out.extend([0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend_from_slice(content);
    out
}

proptest::proptest! {
    #[test]
    fn decoders_never_panic(text in ".*", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let _ = AppPublicKey::from_pem(&text);
        let _ = spki_rsa_key(&bytes);
        let _ = der_element(&bytes);
        let _ = decode(&text);
        let _ = check(&text, &[], NOW);
    }
}
