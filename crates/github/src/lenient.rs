//! Tolerant field deserializers shared by the wire types: null-as-default fields, lenient
//! dates and integers that may arrive as numbers, numeric strings or null (protocol: "be
//! liberal in what you accept"). Serde only: no error type of the crate, so the id types can
//! use them without depending on the decoding of whole bodies.

use serde::{Deserialize, Deserializer};

use crate::timestamp::Timestamp;

/// Deserializes a field whose `null` means the type's default.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Deserializes a date-time leniently: unparseable, null and the zero date become `None`.
pub(crate) fn lenient_timestamp<'de, D>(deserializer: D) -> Result<Option<Timestamp>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value
        .as_ref()
        .and_then(serde_json::Value::as_str)
        .and_then(Timestamp::parse)
        .filter(|t| !t.is_unset()))
}

/// Deserializes an integer that may arrive as a number, a numeric string or null.
pub(crate) fn lenient_i64<'de, D>(deserializer: D) -> Result<i64, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(lenient_opt_i64(deserializer)?.unwrap_or_default())
}

/// Like [`lenient_i64`], but keeps "absent, null or unreadable" apart from a real number, for
/// fields whose absence means something (a list's `count`, a list item's `runnerGroupId`).
pub(crate) fn lenient_opt_i64<'de, D>(deserializer: D) -> Result<Option<i64>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(match value {
        Some(serde_json::Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}
