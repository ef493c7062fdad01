//! Tolerant JSON decoding shared by the wire types: null-as-default fields, lenient dates,
//! BOM stripping, and the `{count, value}` list envelope.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::endpoint::Endpoint;
use crate::error::{Error, Result, strip_bom};
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

/// The `{ "count": n, "value": [...] }` envelope of list responses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"), from = "ListWire<T>")]
pub struct List<T> {
    /// The server's `count` (official clients decide on this, not on `value.len()`); when the
    /// server omits it, the number of items.
    pub count: i64,
    /// The items.
    pub value: Vec<T>,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct ListWire<T> {
    #[serde(default, deserialize_with = "lenient_opt_i64")]
    count: Option<i64>,
    #[serde(default = "Vec::new", deserialize_with = "null_default")]
    value: Vec<T>,
}

impl<T> From<ListWire<T>> for List<T> {
    fn from(wire: ListWire<T>) -> Self {
        let count = wire
            .count
            .unwrap_or_else(|| i64::try_from(wire.value.len()).unwrap_or(i64::MAX));
        Self {
            count,
            value: wire.value,
        }
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        Self {
            count: 0,
            value: Vec::new(),
        }
    }
}

/// Decodes a success body as JSON after stripping a BOM; an empty body is an error.
pub(crate) fn decode<T: DeserializeOwned>(
    endpoint: Endpoint,
    status: u16,
    body: &[u8],
) -> Result<T> {
    let body = strip_bom(body);
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::UnexpectedResponse {
            endpoint,
            status,
            reason: "the response body is empty, expected JSON".to_owned(),
        });
    }
    serde_json::from_slice(body).map_err(|source| Error::Decode {
        endpoint,
        status,
        source,
    })
}

#[cfg(test)]
mod tests;
