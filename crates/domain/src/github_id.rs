//! GitHub's id of a runner scale set ([`GithubScaleSetId`]): the one type the client, the
//! adoption machine, the store's rows and the controller pass, so it can never be mixed up
//! with the store's own row id (`scaleset_store::ScaleSetId`).

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A runner scale set's id as GitHub assigned it (`RunnerScaleSet.id`, `runnerScaleSetId`).
///
/// The protocol's ids are JSON integers that fit an `i64` (the official Go client uses `int`,
/// the service's C# `long`); the store keeps it in an integer column, losslessly both ways.
///
/// ```
/// use scaleset_domain::GithubScaleSetId;
///
/// let id: GithubScaleSetId = serde_json::from_str(r#""42""#).unwrap();
/// assert_eq!(id, GithubScaleSetId(42));
/// assert_eq!(i64::from(id), 42);
/// assert_eq!(serde_json::to_string(&id).unwrap(), "42");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GithubScaleSetId(pub i64);

impl fmt::Display for GithubScaleSetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// From the store's integer column (lossless).
impl From<i64> for GithubScaleSetId {
    fn from(value: i64) -> Self {
        Self(value)
    }
}

/// To the store's integer column (lossless).
impl From<GithubScaleSetId> for i64 {
    fn from(id: GithubScaleSetId) -> Self {
        id.0
    }
}

/// A plain JSON number.
impl Serialize for GithubScaleSetId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

/// As leniently as the GitHub client reads every integer field: a number (a fraction cut to
/// its whole part, one beyond `i64` saturated), a numeric string, or anything else (null, a
/// word) as 0, which no scale set has.
impl<'de> Deserialize<'de> for GithubScaleSetId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Lenient).map(Self)
    }
}

/// The lenient integer visitor.
struct Lenient;

impl<'de> Visitor<'de> for Lenient {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scale-set id")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        Ok(i64::try_from(v).unwrap_or(i64::MAX))
    }

    #[allow(clippy::cast_possible_truncation)] // saturating by definition of `as` from f64
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        Ok(v as i64)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        Ok(v.trim().parse().unwrap_or_default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<i64, E> {
        Ok(0)
    }

    fn visit_unit<E: de::Error>(self) -> Result<i64, E> {
        Ok(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<i64, E> {
        Ok(0)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<i64, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<i64, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(0)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<i64, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_set_id_decodes_as_leniently_as_the_client_reads_integers() {
        let decoded: Vec<GithubScaleSetId> =
            serde_json::from_str(r#"[5, "6", null, " 7 ", "x", 8.9, {"a": 1}, [1], true]"#)
                .unwrap();
        let ids: Vec<i64> = decoded.into_iter().map(i64::from).collect();
        assert_eq!(ids, [5, 6, 0, 7, 0, 8, 0, 0, 0]);
        let above: GithubScaleSetId = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(above, GithubScaleSetId(i64::MAX));
    }

    #[test]
    fn a_scale_set_id_encodes_as_a_number() {
        assert_eq!(serde_json::to_string(&GithubScaleSetId(9)).unwrap(), "9");
        assert_eq!(GithubScaleSetId(-3).to_string(), "-3");
    }
}
