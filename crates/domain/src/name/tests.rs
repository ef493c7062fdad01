use proptest::prelude::*;

use super::*;
use crate::Label;

#[test]
fn names_follow_the_character_rules() {
    assert!(check_name("linux-x64_1.2", 100).is_ok());
    assert!(check_name("", 100).is_err());
    assert!(check_name("-x", 100).is_err());
    assert!(check_name(".hidden", 100).is_err());
    assert!(check_name("a b", 100).is_err());
    assert!(check_name("a/b", 100).is_err());
    assert!(check_name("é", 100).is_err());
}

#[test]
fn the_length_limit_is_inclusive_and_counted_in_characters() {
    assert_eq!(check_name(&"a".repeat(100), 100), Ok(()));
    assert_eq!(
        check_name(&"a".repeat(101), 100),
        Err(NameError::Length {
            text: "a".repeat(101),
            chars: 101,
            max: 100
        })
    );
    // 40 characters, 79 bytes: refused for the character, never for a length it lacks.
    let wide = format!("a{}", "é".repeat(39));
    assert!(matches!(
        check_name(&wide, 40),
        Err(NameError::Character { bad: 'é', .. })
    ));
}

#[test]
fn a_refusal_says_what_to_write_instead() {
    let error = check_name("a/b", 40).unwrap_err();
    assert_eq!(
        error.to_string(),
        "\"a/b\" contains '/'; use 1–40 of A-Z a-z 0-9 . _ -, starting with a letter or digit"
    );
}

#[test]
fn each_name_has_its_own_limit() {
    assert!(ScaleSetName::parse(&"a".repeat(SCALE_SET_NAME_MAX)).is_ok());
    assert!(ScaleSetName::parse(&"a".repeat(SCALE_SET_NAME_MAX + 1)).is_err());
    assert!(RunnerPrefix::parse(&"a".repeat(RUNNER_PREFIX_MAX)).is_ok());
    assert!(RunnerPrefix::parse(&"a".repeat(RUNNER_PREFIX_MAX + 1)).is_err());
    assert!(ProviderName::parse(&"a".repeat(PROVIDER_MAX)).is_ok());
    assert!(ProviderName::parse(&"a".repeat(PROVIDER_MAX + 1)).is_err());
}

#[test]
fn a_scale_set_name_never_starts_with_the_owner_label_prefix_in_any_case() {
    for text in ["scaleset-owner-x", "ScaleSet-Owner-abc"] {
        assert_eq!(
            ScaleSetName::parse(text),
            Err(ScaleSetNameError::OwnerPrefix {
                text: text.to_owned()
            })
        );
    }
    assert!(ScaleSetName::parse("scaleset-ownerless").is_ok());
}

#[test]
fn names_and_labels_are_read_through_their_parser() {
    let name: ScaleSetName = serde_json::from_str("\"linux\"").unwrap();
    assert_eq!(name, "linux");
    assert_eq!(serde_json::to_string(&name).unwrap(), "\"linux\"");
    let refused = serde_json::from_str::<ScaleSetName>("\"../escape\"").unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("does not start with a letter or digit")
    );
    assert!(serde_json::from_str::<RunnerPrefix>("\"a b\"").is_err());
    assert!(serde_json::from_str::<ProviderName>("\"\"").is_err());
    assert!(serde_json::from_str::<Label>("\"a,b\"").is_err());
    assert!(serde_json::from_str::<Label>("\"scaleset-owner-1\"").is_err());
    assert_eq!(
        serde_json::from_str::<Label>("\"GPU large\"")
            .unwrap()
            .as_str(),
        "GPU large"
    );
    assert_eq!(ScaleSetName::try_from("linux"), "linux".parse());
}

proptest! {
    /// Whatever the text, a length refusal happens exactly when its character count (not its
    /// byte count) is 0 or above the limit.
    #[test]
    fn a_length_refusal_is_about_characters(text in "\\PC{0,12}", max in 1usize..10) {
        let chars = text.chars().count();
        let refused_for_length = matches!(check_name(&text, max), Err(NameError::Length { .. }));
        prop_assert_eq!(refused_for_length, chars == 0 || chars > max);
    }

    /// Every text the rule accepts is one safe path component of the allowed characters.
    #[test]
    fn an_accepted_name_is_one_safe_path_component(text in "\\PC{0,12}") {
        if check_name(&text, 12).is_ok() {
            prop_assert!(text.chars().all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c)));
            prop_assert!(text.starts_with(|c: char| c.is_ascii_alphanumeric()));
            prop_assert!(text != "." && text != "..");
            prop_assert!(!text.contains('/'));
        }
    }

    /// Every text of the allowed characters, starting with a letter or digit, within the
    /// limit, is accepted; one character more is refused for its length.
    #[test]
    fn every_name_of_the_allowed_characters_up_to_the_limit_is_accepted(
        text in "[A-Za-z0-9][A-Za-z0-9._-]{0,39}",
    ) {
        let chars = text.chars().count();
        prop_assert_eq!(check_name(&text, chars), Ok(()));
        let refused = matches!(
            check_name(&text, chars - 1),
            Err(NameError::Length { chars: c, .. }) if c == chars
        );
        prop_assert!(refused, "{text:?} is refused for its length");
    }

    /// A name with any non-ASCII character is refused for that character when it fits the
    /// limit in characters, however many bytes it takes.
    #[test]
    fn a_non_ascii_character_is_refused_by_name(
        head in "[a-z]{1,5}",
        wide in "[^\\x00-\\x7F]",
        tail in "[a-z]{0,5}",
    ) {
        let text = format!("{head}{wide}{tail}");
        let max = text.chars().count();
        let bad = wide.chars().next().unwrap();
        let refused = matches!(
            check_name(&text, max),
            Err(NameError::Character { bad: b, .. }) if b == bad
        );
        prop_assert!(refused, "{text:?} is refused for {bad:?}");
    }

    /// The newtypes agree with the rule they share.
    #[test]
    fn the_newtypes_share_the_one_rule(text in "\\PC{0,70}") {
        prop_assert_eq!(RunnerPrefix::parse(&text).is_ok(), check_name(&text, RUNNER_PREFIX_MAX).is_ok());
        prop_assert_eq!(ProviderName::parse(&text).is_ok(), check_name(&text, PROVIDER_MAX).is_ok());
        prop_assert_eq!(
            ScaleSetName::parse(&text).is_ok(),
            check_name(&text, SCALE_SET_NAME_MAX).is_ok() && !crate::has_owner_prefix(&text)
        );
    }
}
