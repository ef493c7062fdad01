//! Decoding whole bodies: BOM stripping, the empty-body error, and the `{count, value}` list
//! envelope. The per-field deserializers are in [`crate::lenient`].

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::endpoint::Endpoint;
use crate::error::{Error, Result, strip_bom};
use crate::lenient::{lenient_opt_i64, null_default};

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
