//! Free text GitHub shows ([`check_text`]: a runner group's name, a label) and the
//! operator's [`Label`], which is such text and never an owner label. Labels travel
//! comma-joined to GitHub, so none holds a comma; GitHub compares them without case.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Prefix of every owner label (`scaleset-owner-<32 hex digits>`, DESIGN §3): a label with
/// this prefix is a controller's ownership claim, never the operator's to write, and a
/// scale-set name (which is also a label) may not start with it.
pub const OWNER_LABEL_PREFIX: &str = "scaleset-owner-";

/// The longest label, in characters.
pub const LABEL_MAX: usize = 100;

/// Whether `text` starts with [`OWNER_LABEL_PREFIX`], in any case (GitHub compares labels
/// without case).
pub fn has_owner_prefix(text: &str) -> bool {
    text.get(..OWNER_LABEL_PREFIX.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(OWNER_LABEL_PREFIX))
}

/// Why a text cannot be shown on GitHub as a label or group name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// Empty, or longer than the limit.
    #[error("{text:?} has {chars} characters; use 1–{max}")]
    Length {
        /// The text.
        text: String,
        /// How many characters it has.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// Spaces at either end.
    #[error("{text:?} has leading or trailing spaces; remove them")]
    Spaces {
        /// The text.
        text: String,
    },
    /// A control character or a comma.
    #[error(
        "{text:?} contains a control character or a comma (labels travel comma-joined); split \
         or rename it"
    )]
    Character {
        /// The text.
        text: String,
    },
}

/// Free text shown on GitHub: 1 to `max` characters, no control character, no comma, no
/// space at either end.
///
/// # Errors
///
/// The [`TextError`] naming the first thing wrong.
pub fn check_text(text: &str, max: usize) -> Result<(), TextError> {
    let chars = text.chars().count();
    if chars == 0 || chars > max {
        return Err(TextError::Length {
            text: text.to_owned(),
            chars,
            max,
        });
    }
    if text.trim() != text {
        return Err(TextError::Spaces {
            text: text.to_owned(),
        });
    }
    if text.chars().any(|c| c.is_control() || c == ',') {
        return Err(TextError::Character {
            text: text.to_owned(),
        });
    }
    Ok(())
}

/// Why a text is no label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// It cannot be shown on GitHub.
    #[error(transparent)]
    Text(#[from] TextError),
    /// It is an owner label.
    #[error(
        "{text:?} is an owner label: the controller adds its own, and GitHub would be told \
         another controller owns this scale set; remove it"
    )]
    OwnerLabel {
        /// The text.
        text: String,
    },
}

/// A label the operator gives a scale set: [`check_text`] with at most [`LABEL_MAX`]
/// characters, and no owner label.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(String);

impl Label {
    /// Parses a label.
    ///
    /// # Errors
    ///
    /// The [`LabelError`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Self, LabelError> {
        check_text(text, LABEL_MAX)?;
        if has_owner_prefix(text) {
            return Err(LabelError::OwnerLabel {
                text: text.to_owned(),
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The label as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether two labels are the same to GitHub (which compares without case).
    pub fn same_on_github(&self, other: &Self) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl TryFrom<&str> for Label {
    type Error = LabelError;
    fn try_from(text: &str) -> Result<Self, LabelError> {
        Self::parse(text)
    }
}

impl std::str::FromStr for Label {
    type Err = LabelError;
    fn from_str(text: &str) -> Result<Self, LabelError> {
        Self::parse(text)
    }
}

impl AsRef<str> for Label {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// As the text's own `Debug` (quoted), as the names print.
impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Label> for String {
    fn from(label: Label) -> Self {
        label.0
    }
}

impl Serialize for Label {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// Through [`Label::parse`]: a label read from JSON or TOML is as checked as one parsed.
impl<'de> Deserialize<'de> for Label {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}
