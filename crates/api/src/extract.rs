//! Extractors whose rejections are [`ApiError`]s, so a bad body or parameter gets the one JSON
//! error shape: [`Body`] (JSON with unknown fields refused by the types, the size limit from
//! [`crate::Limits`]), [`Params`] (query strings) and [`parse_id`] (UUIDs in paths).

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON request body.
#[derive(Debug, Clone)]
pub struct Body<T>(pub T);

impl<T, S> FromRequest<S> for Body<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let limit = request
            .extensions()
            .get::<BodyLimit>()
            .map_or(usize::MAX, |l| l.0);
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(&rejection, limit)),
        }
    }
}

/// The body limit in force, as a request extension (for the 413 message).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimit(pub(crate) usize);

fn json_rejection(rejection: &JsonRejection, limit: usize) -> ApiError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::UnsupportedMediaType,
        JsonRejection::BytesRejection(_) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge { limit }
        }
        other => ApiError::InvalidBody {
            reason: other.body_text(),
        },
    }
}

/// Query-string parameters.
#[derive(Debug, Clone)]
pub struct Params<T>(pub T);

impl<T, S> FromRequestParts<S> for Params<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(query_rejection(&rejection)),
        }
    }
}

fn query_rejection(rejection: &QueryRejection) -> ApiError {
    ApiError::InvalidParameter {
        reason: rejection.body_text(),
    }
}

/// Parses a path id as a UUID, naming what it identifies when it is not one.
pub fn parse_id(text: &str, what: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(text).map_err(|_| ApiError::InvalidParameter {
        reason: format!("{text:?} is not a {what} id (a UUID)"),
    })
}
