//! Input rules of the API's own resources (credential and entity names, CA bundles, secrets,
//! ranges), checked before anything is written. A scale set's spec and an endpoint are parsed
//! by the store's one parser instead ([`scaleset_store::ScaleSetSpec::parse`],
//! [`scaleset_store::Endpoint::parse`]); [`spec_problems`] words its problems. Each failure
//! is an [`ApiError::InvalidInput`] naming the field, what was wrong and what is allowed.

use crate::error::ApiError;

fn invalid(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::InvalidInput {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

/// A name by the one name rule ([`scaleset_domain::check_name`]): 1 to `max` characters
/// (characters, not bytes) of `A-Za-z0-9._-`, starting with a letter or digit.
pub(crate) fn name(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    scaleset_domain::check_name(text, max).map_err(|error| invalid(field, error.to_string()))
}

/// A PEM bundle of at least one certificate, each of which the GitHub client can trust: its
/// own parser ([`scaleset_github::ca_bundle_roots`]), so a bundle stored here is one the
/// worker can use.
pub(crate) fn ca_bundle(field: &str, pem: &str) -> Result<(), ApiError> {
    scaleset_github::ca_bundle_roots(pem.as_bytes())
        .map(drop)
        .map_err(|e| {
            invalid(
                field,
                format!(
                    "{e}; give the PEM certificates of the CA that signed the server's certificate"
                ),
            )
        })
}

/// A personal access token the GitHub client can send ([`scaleset_github::check_pat`]: no
/// line break or other control character).
pub(crate) fn pat(field: &str, token: &str) -> Result<(), ApiError> {
    scaleset_github::check_pat(token).map_err(|e| invalid(field, e.to_string()))
}

/// A secret: not empty, no whitespace at its ends (unless PEM), at most `max` characters
/// (characters, as the OpenAPI document's `maxLength` counts them).
pub(crate) fn secret(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.trim().is_empty() {
        return Err(invalid(field, "is empty"));
    }
    if value.chars().count() > max {
        return Err(invalid(field, format!("is longer than {max} characters")));
    }
    if value.trim() != value && !value.contains("-----BEGIN") {
        return Err(invalid(field, "has leading or trailing whitespace"));
    }
    Ok(())
}

/// Every problem the spec parser found, as one answer naming each field
/// (`invalid scale set: name: …; labels[1]: …`).
pub(crate) fn spec_problems(problems: Vec<scaleset_store::SpecProblem>) -> ApiError {
    invalid(
        "scale set",
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// A number within `min..=max`.
pub(crate) fn range<T: PartialOrd + std::fmt::Display>(
    field: &str,
    value: T,
    min: T,
    max: T,
) -> Result<(), ApiError> {
    if value < min || value > max {
        return Err(invalid(field, format!("{value} is outside {min}–{max}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_character_rules() {
        assert!(name("n", "linux-x64_1.2", 100).is_ok());
        assert!(name("n", "", 100).is_err());
        assert!(name("n", "-x", 100).is_err());
        assert!(name("n", "a b", 100).is_err());
        assert!(name("n", "a/b", 100).is_err());
        assert!(name("n", "é", 100).is_err());
        assert!(name("n", &"a".repeat(101), 100).is_err());
        assert!(name("n", &"a".repeat(100), 100).is_ok());
        // Counted in characters: refused for the character, not for 100 bytes it lacks.
        let wide = format!("a{}", "é".repeat(50));
        let Err(ApiError::InvalidInput { reason, .. }) = name("n", &wide, 100) else {
            panic!("a name with é is refused")
        };
        assert!(reason.contains("contains 'é'"), "{reason}");
    }

    #[test]
    fn a_ca_bundle_must_hold_a_certificate() {
        assert!(ca_bundle("c", "not pem").is_err());
        assert!(
            ca_bundle(
                "c",
                "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"
            )
            .is_err()
        );
        assert!(
            ca_bundle(
                "c",
                "-----BEGIN CERTIFICATE-----\nZZZZ\n-----END CERTIFICATE-----\n"
            )
            .is_err()
        );
    }

    #[test]
    fn secrets_are_limited_in_characters_as_the_document_counts_them() {
        assert!(secret("s", &"é".repeat(16), 16).is_ok());
        assert!(secret("s", &"é".repeat(17), 16).is_err());
        assert!(secret("s", " x", 16).is_err());
        assert!(secret("s", "-----BEGIN x\n", 16).is_ok());
    }

    #[test]
    fn ranges_are_inclusive() {
        assert!(range("r", 1, 1, 10).is_ok());
        assert!(range("r", 10, 1, 10).is_ok());
        assert!(range("r", 0, 1, 10).is_err());
        assert!(range("r", 11, 1, 10).is_err());
    }
}
