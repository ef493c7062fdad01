//! GitHub's integer ids as types: a scale set's id cannot be passed where a runner's is
//! expected, and every conversion to another crate's representation is spelled out.
//!
//! The protocol's ids are JSON integers that fit an `i64` (the official Go client uses `int`,
//! the service's C# `long`), so each id wraps an `i64`:
//!
//! - to and from the store's integer columns (`i64`): lossless, `From` both ways;
//! - to and from `scaleset-adopt`'s ids (`u64`): checked, `TryFrom` both ways, failing with
//!   [`IdOutOfRange`] for a negative id (never sent by GitHub) or one above `i64::MAX`.
//!
//! On the wire an id decodes as leniently as every other integer field (a number, a numeric
//! string, or null/absent as 0) and encodes as a plain JSON number.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A runner scale set's id (`RunnerScaleSet.id`, `runnerScaleSetId`): the one type every crate
/// passes, from `scaleset-domain` (the adoption machine and the store use it too).
pub use scaleset_domain::GithubScaleSetId;

/// A GitHub id that does not fit the other side of a conversion: a negative id (GitHub never
/// sends one) cannot become an unsigned id, and one above `i64::MAX` is no GitHub id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} id {value} is out of range: GitHub ids are 0 to {max}; the value came from a \
     response or record that is not GitHub's (check what produced it)",
    max = i64::MAX
)]
pub struct IdOutOfRange {
    /// Which id (`scale set`, `runner group`, …).
    pub kind: &'static str,
    /// The value that did not fit, as text (it may be negative or above `i64::MAX`).
    pub value: String,
}

macro_rules! github_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub i64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        /// From the store's integer column (lossless).
        impl From<i64> for $name {
            fn from(value: i64) -> Self {
                Self(value)
            }
        }

        /// To the store's integer column (lossless).
        impl From<$name> for i64 {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        /// From an unsigned id (`scaleset-adopt`'s): fails above `i64::MAX`.
        impl TryFrom<u64> for $name {
            type Error = IdOutOfRange;
            fn try_from(value: u64) -> Result<Self, IdOutOfRange> {
                i64::try_from(value).map(Self).map_err(|_| IdOutOfRange {
                    kind: $kind,
                    value: value.to_string(),
                })
            }
        }

        /// To an unsigned id (`scaleset-adopt`'s): fails when negative.
        impl TryFrom<$name> for u64 {
            type Error = IdOutOfRange;
            fn try_from(id: $name) -> Result<Self, IdOutOfRange> {
                u64::try_from(id.0).map_err(|_| IdOutOfRange {
                    kind: $kind,
                    value: id.0.to_string(),
                })
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_i64(self.0)
            }
        }

        /// Lenient, like every integer field: a number, a numeric string, or null (0).
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                crate::lenient::lenient_i64(deserializer).map(Self)
            }
        }
    };
}

github_id!(
    /// A runner group's id (`runnerGroupId`; the default group is 1).
    RunnerGroupId,
    "runner group"
);
github_id!(
    /// A registered runner's (agent's) id (`RunnerReference.id`, a job message's `runnerId`).
    RunnerId,
    "runner"
);
github_id!(
    /// A queue message's id (`messageId`): the poll cursor and the ack key.
    MessageId,
    "message"
);
github_id!(
    /// A job request's id (`runnerRequestId`): the acquire key on GHES, 0 on the github.com
    /// broker. Named after the protocol field, not "request id", which is the HTTP
    /// `x-github-request-id` of a call.
    RunnerRequestId,
    "runner request"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_columns_convert_losslessly_both_ways() {
        assert_eq!(i64::from(RunnerGroupId::from(-7)), -7);
        assert_eq!(i64::from(RunnerId(i64::MAX)), i64::MAX);
        assert_eq!(MessageId::from(42), MessageId(42));
    }

    #[test]
    fn unsigned_ids_convert_when_in_range() {
        assert_eq!(u64::try_from(RunnerId(0)), Ok(0));
        assert_eq!(u64::try_from(RunnerGroupId(i64::MAX)), Ok(i64::MAX as u64));
        assert_eq!(RunnerGroupId::try_from(1_u64), Ok(RunnerGroupId(1)));
        assert_eq!(RunnerId::try_from(i64::MAX as u64), Ok(RunnerId(i64::MAX)));
    }

    #[test]
    fn negative_ids_are_refused_as_unsigned_naming_the_id() {
        let error = u64::try_from(RunnerGroupId(-1)).unwrap_err();
        assert_eq!(error.kind, "runner group");
        assert_eq!(error.value, "-1");
        assert!(
            error
                .to_string()
                .starts_with("runner group id -1 is out of range")
        );
        assert!(u64::try_from(RunnerId(i64::MIN)).is_err());
    }

    #[test]
    fn unsigned_ids_above_i64_are_refused_naming_the_id() {
        let error = RunnerGroupId::try_from(u64::MAX).unwrap_err();
        assert_eq!(error.kind, "runner group");
        assert_eq!(error.value, u64::MAX.to_string());
        assert!(RunnerId::try_from(i64::MAX as u64 + 1).is_err());
    }

    #[test]
    fn ids_decode_leniently_and_encode_as_numbers() {
        let decoded: Vec<RunnerId> = serde_json::from_str(r#"[5, "6", null]"#).unwrap();
        assert_eq!(decoded, [RunnerId(5), RunnerId(6), RunnerId(0)]);
        assert_eq!(serde_json::to_string(&MessageId(9)).unwrap(), "9");
        assert_eq!(RunnerRequestId(3).to_string(), "3");
    }
}
