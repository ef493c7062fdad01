//! The one name rule ([`check_name`]) and the names that follow it: [`ScaleSetName`],
//! [`RunnerPrefix`] and [`ProviderName`]. The rule counts characters, not bytes, so a name
//! with a multi-byte character is refused for that character, never for a length it does
//! not have.
//!
//! Why this rule: a scale-set name or runner prefix becomes a runner name, and a runner name
//! becomes a file name and a command argument at the providers; so each is one safe path
//! component (never empty, `.`, `..`, hidden, or holding a `/` or a space).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::label::{OWNER_LABEL_PREFIX, has_owner_prefix};

/// What a name may be, as a regular expression (the length limits are separate).
pub const NAME_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._-]*$";
/// The longest scale-set name, in characters.
pub const SCALE_SET_NAME_MAX: usize = 100;
/// The longest runner prefix, in characters (runner names add `-` and 8 characters).
pub const RUNNER_PREFIX_MAX: usize = 40;
/// The longest provider name, in characters.
pub const PROVIDER_MAX: usize = 64;

/// Why a text is no name: each variant says what was found, and the message says what to
/// write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty, or longer than the limit.
    #[error(
        "{text:?} has {chars} characters; use 1–{max} of A-Z a-z 0-9 . _ -, starting with a \
         letter or digit"
    )]
    Length {
        /// The text.
        text: String,
        /// How many characters it has.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// The first character is no ASCII letter or digit.
    #[error(
        "{text:?} does not start with a letter or digit; use 1–{max} of A-Z a-z 0-9 . _ -, \
         starting with a letter or digit"
    )]
    Start {
        /// The text.
        text: String,
        /// The limit.
        max: usize,
    },
    /// A character outside `A-Z a-z 0-9 . _ -`.
    #[error(
        "{text:?} contains {bad:?}; use 1–{max} of A-Z a-z 0-9 . _ -, starting with a letter \
         or digit"
    )]
    Character {
        /// The text.
        text: String,
        /// The first character not allowed.
        bad: char,
        /// The limit.
        max: usize,
    },
}

/// The name rule: 1 to `max` characters of `A-Z a-z 0-9 . _ -`, starting with a letter or
/// digit. The one home of the rule; the newtypes below and every other name (an instance
/// name at the providers, an encryption key id) call it.
///
/// ```
/// use scaleset_domain::check_name;
///
/// assert!(check_name("linux-x64_1.2", 100).is_ok());
/// assert!(check_name("..", 100).is_err());
/// assert!(check_name(&"é".repeat(3), 100).is_err());
/// ```
///
/// # Errors
///
/// The [`NameError`] naming the first thing wrong.
pub fn check_name(text: &str, max: usize) -> Result<(), NameError> {
    let chars = text.chars().count();
    if chars == 0 || chars > max {
        return Err(NameError::Length {
            text: text.to_owned(),
            chars,
            max,
        });
    }
    if !text.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(NameError::Start {
            text: text.to_owned(),
            max,
        });
    }
    if let Some(bad) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(NameError::Character {
            text: text.to_owned(),
            bad,
            max,
        });
    }
    Ok(())
}

/// Why a text is no scale-set name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScaleSetNameError {
    /// It breaks the name rule.
    #[error(transparent)]
    Name(#[from] NameError),
    /// It starts with the owner-label prefix.
    #[error(
        "{text:?} starts with {OWNER_LABEL_PREFIX:?}, which is reserved for owner labels (the \
         name is also a label, and would read as another controller's ownership claim); rename it"
    )]
    OwnerPrefix {
        /// The text.
        text: String,
    },
}

/// Serde through the type's parser: a value read from JSON or TOML is as checked as one
/// parsed from text.
macro_rules! serde_via_parse {
    ($name:ident, $error:ty) => {
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = $error;
            fn try_from(text: &str) -> Result<Self, Self::Error> {
                Self::parse(text)
            }
        }

        impl std::str::FromStr for $name {
            type Err = $error;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::parse(text)
            }
        }

        impl $name {
            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        /// As the text's own `Debug` (quoted), so a message that quotes a name with `{:?}`
        /// reads the same whether it holds the text or the name.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> Self {
                name.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

/// A scale set's name on GitHub: the name rule with at most [`SCALE_SET_NAME_MAX`]
/// characters, and never starting with the owner-label prefix.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScaleSetName(String);

impl ScaleSetName {
    /// Parses a scale-set name.
    ///
    /// # Errors
    ///
    /// The [`ScaleSetNameError`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Self, ScaleSetNameError> {
        check_name(text, SCALE_SET_NAME_MAX)?;
        if has_owner_prefix(text) {
            return Err(ScaleSetNameError::OwnerPrefix {
                text: text.to_owned(),
            });
        }
        Ok(Self(text.to_owned()))
    }
}
serde_via_parse!(ScaleSetName, ScaleSetNameError);

/// The prefix of a scale set's runner names (`<prefix>-<8 characters>`): the name rule with
/// at most [`RUNNER_PREFIX_MAX`] characters.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunnerPrefix(String);

impl RunnerPrefix {
    /// Parses a runner prefix.
    ///
    /// # Errors
    ///
    /// The [`NameError`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Self, NameError> {
        check_name(text, RUNNER_PREFIX_MAX)?;
        Ok(Self(text.to_owned()))
    }
}
serde_via_parse!(RunnerPrefix, NameError);

/// A configured provider's name: the name rule with at most [`PROVIDER_MAX`] characters.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProviderName(String);

impl ProviderName {
    /// Parses a provider name.
    ///
    /// # Errors
    ///
    /// The [`NameError`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Self, NameError> {
        check_name(text, PROVIDER_MAX)?;
        Ok(Self(text.to_owned()))
    }
}
serde_via_parse!(ProviderName, NameError);

#[cfg(test)]
mod tests;
