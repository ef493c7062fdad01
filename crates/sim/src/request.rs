//! One request as the handlers see it (method, endpoint, query, headers, body, origin, and the
//! credential it carries), and the successful answer they return before rendering.

use std::collections::HashMap;

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{HeaderMap, Method};
use serde_json::Value;

use crate::exception::ApiError;
use crate::route::Endpoint;

/// What a handler returns: an answer to render, or an error to render.
pub(crate) type Outcome = Result<Reply, ApiError>;

/// A successful answer before rendering.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Body,
    /// Headers of the answer beyond the content type (GitHub's `Link` for a paged list).
    pub(crate) headers: Vec<(&'static str, String)>,
}

/// The body of a successful answer.
#[derive(Debug)]
pub(crate) enum Body {
    /// No body.
    Empty,
    /// A JSON document (`application/json; charset=utf-8`).
    Json(Value),
    /// Opaque bytes of the given content type.
    Bytes {
        content_type: &'static str,
        bytes: Bytes,
    },
}

impl Reply {
    /// A JSON answer.
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: Body::Json(body),
            headers: Vec::new(),
        }
    }

    /// A body-less answer.
    pub(crate) fn empty(status: u16) -> Self {
        Self {
            status,
            body: Body::Empty,
            headers: Vec::new(),
        }
    }

    /// An answer of opaque bytes.
    pub(crate) fn bytes(status: u16, content_type: &'static str, bytes: Bytes) -> Self {
        Self {
            status,
            body: Body::Bytes {
                content_type,
                bytes,
            },
            headers: Vec::new(),
        }
    }

    /// The same answer with one more header.
    pub(crate) fn with_header(mut self, name: &'static str, value: String) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// One parsed request.
pub(crate) struct Request {
    pub(crate) method: Method,
    pub(crate) endpoint: Endpoint,
    pub(crate) query: HashMap<String, String>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// `http://HOST` or `https://HOST` as the client addressed us.
    pub(crate) origin: String,
    /// The connection the request came on.
    pub(crate) connection: Connection,
}

/// What a request knows of the connection that carries it.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    /// `http` or `https`.
    pub(crate) scheme: &'static str,
    /// Cancelled to close the connection gracefully (the `goaway` fault).
    pub(crate) goaway: tokio_util::sync::CancellationToken,
    /// The client's address, recorded in the request log.
    pub(crate) peer: Option<std::net::SocketAddr>,
}

impl Request {
    /// A query value, form-decoded (`+` is a space), matching the key case-insensitively.
    pub(crate) fn query(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// The token of an `Authorization: Bearer` header.
    pub(crate) fn bearer(&self) -> Option<&str> {
        self.credential(&["bearer"])
    }

    /// The token of a GitHub REST call: GitHub takes `Bearer` and the older `token` scheme.
    pub(crate) fn rest_token(&self) -> Option<&str> {
        self.credential(&["bearer", "token"])
    }

    /// The token of an `Authorization` header in one of `schemes` (case-insensitive).
    pub(crate) fn credential(&self, schemes: &[&str]) -> Option<&str> {
        let value = self.headers.get(AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        schemes
            .iter()
            .any(|s| scheme.eq_ignore_ascii_case(s))
            .then_some(token.trim())
    }

    /// The body as JSON (`Null` when empty or not JSON).
    pub(crate) fn json(&self) -> Value {
        let body = self
            .body
            .strip_prefix(&[0xEF, 0xBB, 0xBF][..])
            .unwrap_or(&self.body);
        serde_json::from_slice(body).unwrap_or(Value::Null)
    }
}
