//! Who we are on GitHub (DESIGN §3): the controller id, parsed once as a UUID, and every name
//! derived from it (session owner, probe owner, owner label, provider pool key) in one place.

use std::fmt;
use std::str::FromStr;

use crate::scale_set::{GithubScaleSetId, ScaleSet};

/// Prefix of every scaleset owner label; a label with this prefix that is not ours is another
/// controller's ownership claim (evidence against adoption). Its one home is
/// `scaleset-domain`, where a scale-set name and an operator's label are refused for it.
pub use scaleset_domain::OWNER_LABEL_PREFIX;

/// The controller id: a UUID, parsed once (std only), from which every durable name derives.
///
/// Accepted spellings: hyphenated (`8-4-4-4-12`) or 32 plain hex digits, any case. It is kept
/// and shown in the canonical form: lower-case and hyphenated, as `uuid::Uuid` displays it, so
/// the store's and the provider's `Uuid` and this type name the same controller identically.
///
/// ```
/// use scaleset_adopt::{ControllerId, GithubScaleSetId};
/// let id: ControllerId = "3F2A9C1E-77B0-4D4E-9A55-0123456789AB".parse()?;
/// assert_eq!(id.to_string(), "3f2a9c1e-77b0-4d4e-9a55-0123456789ab");
/// assert_eq!(id.session_owner(), "scaleset-3f2a9c1e-77b0-4d4e-9a55-0123456789ab");
/// assert_eq!(id.owner_label(), "scaleset-owner-3f2a9c1e77b04d4e9a550123456789ab");
/// assert_eq!(id.pool_key(GithubScaleSetId(42)), "3f2a9c1e-77b0-4d4e-9a55-0123456789ab_42");
/// assert!("controller-1".parse::<ControllerId>().is_err());
/// # Ok::<(), scaleset_adopt::ControllerIdError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "String", into = "String"))]
pub struct ControllerId([u8; 16]);

/// Why a text is not a controller id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerIdError {
    /// The text is not a UUID (hyphenated `8-4-4-4-12` or 32 hex digits).
    #[error(
        "controller id {value:?} is not a UUID ({problem}): set `controller_id` to a UUID such \
         as 3f2a9c1e-77b0-4d4e-9a55-0123456789ab (keep the one the database holds)"
    )]
    NotAUuid {
        /// The text given.
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
}

impl ControllerId {
    /// Parses a UUID, hyphenated or as 32 hex digits, in any case.
    ///
    /// # Errors
    ///
    /// [`ControllerIdError::NotAUuid`] naming the text and what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, ControllerIdError> {
        let not = |problem| ControllerIdError::NotAUuid {
            value: text.to_owned(),
            problem,
        };
        let digits: Vec<u8> = match text.len() {
            36 => {
                let hyphens_in_place = text
                    .char_indices()
                    .all(|(at, c)| (c == '-') == matches!(at, 8 | 13 | 18 | 23));
                if !hyphens_in_place {
                    return Err(not("hyphens must separate groups of 8-4-4-4-12 hex digits"));
                }
                text.bytes().filter(|b| *b != b'-').collect()
            }
            32 => text.bytes().collect(),
            _ => return Err(not("expected 36 characters hyphenated or 32 hex digits")),
        };
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let (Some(high), Some(low)) = (hex_value(pair[0]), hex_value(pair[1])) else {
                return Err(not("only hex digits 0-9 and a-f are allowed"));
            };
            *byte = high * 16 + low;
        }
        Ok(Self(bytes))
    }

    /// The id from its 16 bytes (as `uuid::Uuid::as_bytes` gives them), for callers that hold
    /// an already validated UUID.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The id's 16 bytes (for `uuid::Uuid::from_bytes`).
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The 32 lower-case hex digits, without hyphens.
    pub fn hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// `ownerName` of every message session our listeners open: `scaleset-<controller id>`.
    /// Listeners only serve scale sets already ours (known, created or adopted), and the
    /// adoption machine never opens a session under this name, so a session conflict naming
    /// it is our own stale listener session (evidence of ownership).
    pub fn session_owner(&self) -> String {
        format!("scaleset-{self}")
    }

    /// `ownerName` of every session the adoption machine opens, i.e. every ownership probe
    /// (policy `any`, and `owned` with the probe on): `scaleset-<controller id>-probe`. A probe
    /// runs on a scale set not yet proven ours, so a probe session that leaks must never read
    /// later as our own stale session: a conflict naming this name is never evidence. Under
    /// policy `any` the probe's session is handed to the listener and keeps this name.
    pub fn probe_owner(&self) -> String {
        format!("scaleset-{self}-probe")
    }

    /// Our owner label: `scaleset-owner-<all 32 hex digits>`. All of them: the first 12 hex
    /// digits of a UUIDv7 are only its creation millisecond, shared by controllers made at once.
    pub fn owner_label(&self) -> String {
        format!("{OWNER_LABEL_PREFIX}{}", self.hex())
    }

    /// The provider pool key of one scale set: `<controller id>_<scale-set id>`, with no `:`
    /// (GCP and Kubernetes label values reject it). Tagged on every provider instance so
    /// instances are found again after a database loss.
    pub fn pool_key(&self, scale_set: GithubScaleSetId) -> String {
        scaleset_domain::pool_key_text(self, scale_set)
    }
}

fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

impl fmt::Display for ControllerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex();
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }
}

impl FromStr for ControllerId {
    type Err = ControllerIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl TryFrom<String> for ControllerId {
    type Error = ControllerIdError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(&text)
    }
}

impl From<ControllerId> for String {
    fn from(id: ControllerId) -> Self {
        id.to_string()
    }
}

/// The controller identity on GitHub: the [`ControllerId`] and whether our owner label is
/// added at create and repair.
///
/// It can only be built from a parsed [`ControllerId`]; every name derives from it. With the
/// owner label switched off, our own label (which the id determines) is still recognised as
/// ours: a scale set labelled by us before the switch was turned off stays ours.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Identity {
    controller_id: ControllerId,
    add_owner_label: bool,
}

impl Identity {
    /// Our identity with the owner label on (the default).
    pub fn new(controller_id: ControllerId) -> Self {
        Self {
            controller_id,
            add_owner_label: true,
        }
    }

    /// The same identity with owner labels switched off (config `owner_label = false`): none is
    /// added at create or repair; an existing one of ours still counts as evidence.
    #[must_use]
    pub fn without_owner_label(self) -> Self {
        Self {
            add_owner_label: false,
            ..self
        }
    }

    /// The controller id.
    pub fn controller_id(&self) -> ControllerId {
        self.controller_id
    }

    /// `ownerName` of our listeners' message sessions; see [`ControllerId::session_owner`].
    pub fn session_owner(&self) -> String {
        self.controller_id.session_owner()
    }

    /// `ownerName` of every ownership probe; see [`ControllerId::probe_owner`].
    pub fn probe_owner(&self) -> String {
        self.controller_id.probe_owner()
    }

    /// The owner label we add at create and repair, or `None` when switched off.
    pub fn owner_label(&self) -> Option<String> {
        self.add_owner_label
            .then(|| self.controller_id.owner_label())
    }

    /// Whether `label` is our owner label (case-insensitive), whether or not we add it.
    pub fn is_our_owner_label(&self, label: &str) -> bool {
        self.controller_id.owner_label().eq_ignore_ascii_case(label)
    }

    /// Whether `label` is any owner label: ours, or one carrying [`OWNER_LABEL_PREFIX`].
    pub fn is_owner_label(&self, label: &str) -> bool {
        scaleset_domain::has_owner_prefix(label)
    }

    /// Whether `label` is another controller's owner label.
    pub fn is_foreign_owner_label(&self, label: &str) -> bool {
        self.is_owner_label(label) && !self.is_our_owner_label(label)
    }

    /// The foreign owner labels `set` carries (evidence against us), in GitHub's order.
    pub fn foreign_labels(&self, set: &ScaleSet) -> Vec<String> {
        set.labels
            .iter()
            .filter(|label| self.is_foreign_owner_label(label))
            .cloned()
            .collect()
    }

    /// Whether `set` carries our owner label (evidence for us).
    pub fn labelled_ours(&self, set: &ScaleSet) -> bool {
        set.labels
            .iter()
            .any(|label| self.is_our_owner_label(label))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "0123abcd-4567-89ef-0123-456789abcdef";

    #[test]
    fn bytes_round_trip_in_uuid_byte_order() {
        let id = ControllerId::parse(TEXT).expect("hyphenated");
        let bytes = id.to_bytes();
        assert_eq!(bytes[0], 0x01);
        assert_eq!(bytes[15], 0xef);
        assert_eq!(ControllerId::from_bytes(bytes), id);
        assert_eq!(ControllerId::from_bytes(bytes).to_string(), TEXT);
    }

    #[test]
    fn a_uuid_parses_in_both_spellings_and_any_case() {
        let hyphenated = ControllerId::parse(TEXT).expect("hyphenated");
        let plain = ControllerId::parse("0123ABCD456789EF0123456789ABCDEF").expect("plain");
        assert_eq!(hyphenated, plain);
        assert_eq!(plain.to_string(), TEXT);
        assert_eq!(String::from(plain), TEXT);
        assert_eq!(
            ControllerId::try_from(TEXT.to_owned()).expect("from a string"),
            hyphenated
        );
    }

    #[test]
    fn arbitrary_text_is_a_typed_error_naming_it() {
        for bad in [
            "controller-1",
            "",
            "0123abcd-4567-89ef-0123-456789abcdeg",
            "0123abcd4-567-89ef-0123-456789abcdef",
            "0123abcd-4567-89ef-0123-456789abcde",
            "0123abcd+4567+89ef+0123+456789abcdef",
            "0123abcd456789ef0123456789abcdez",
            "é123abcd-4567-89ef-0123-456789abcde",
        ] {
            let error = ControllerId::parse(bad).expect_err(bad);
            assert!(matches!(&error, ControllerIdError::NotAUuid { value, .. } if value == bad));
            assert!(error.to_string().contains("controller_id"), "{error}");
        }
    }

    #[test]
    fn names_derive_from_all_32_hex_digits() {
        // Two UUIDv7 made in the same millisecond share their first 12 hex digits.
        let first = ControllerId::parse("01890a5d-ac96-7000-8000-000000000001").expect("uuid");
        let second = ControllerId::parse("01890a5d-ac96-7000-8000-000000000002").expect("uuid");
        assert_eq!(
            first.owner_label(),
            "scaleset-owner-01890a5dac9670008000000000000001"
        );
        assert_ne!(first.owner_label(), second.owner_label());
        let ours = Identity::new(first);
        assert!(!ours.is_our_owner_label(&second.owner_label()));
        assert!(ours.is_foreign_owner_label(&second.owner_label()));
        assert_eq!(
            first.pool_key(GithubScaleSetId(7)),
            "01890a5d-ac96-7000-8000-000000000001_7"
        );
        assert_eq!(
            (ours.session_owner(), ours.probe_owner()),
            (
                "scaleset-01890a5d-ac96-7000-8000-000000000001".to_owned(),
                "scaleset-01890a5d-ac96-7000-8000-000000000001-probe".to_owned()
            )
        );
        assert_eq!(
            (first.session_owner(), first.probe_owner()),
            (ours.session_owner(), ours.probe_owner())
        );
        assert_eq!(
            "01890A5D-AC96-7000-8000-000000000001".parse::<ControllerId>(),
            Ok(first)
        );
    }

    #[test]
    fn our_label_stays_ours_with_the_switch_off() {
        let id = ControllerId::parse(TEXT).expect("uuid");
        let off = Identity::new(id).without_owner_label();
        assert_eq!(off.owner_label(), None);
        assert_eq!(off.controller_id(), id);
        assert!(off.is_our_owner_label(&id.owner_label().to_uppercase()));
        assert!(!off.is_foreign_owner_label(&id.owner_label()));
        assert!(off.is_owner_label(&id.owner_label()));
        assert!(!off.is_owner_label("linux"));
    }
}
