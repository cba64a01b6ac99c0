//! What a handler takes: the shared state, and a JSON body, a query and a
//! run path that refuse bad input with a stable error code.

use std::sync::Arc;

use aide::OperationInput;
use aide::generate::GenContext;
use aide::openapi::Operation;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::Shared;
use crate::error::{ApiError, ErrorCode};

/// The state every handler shares.
#[derive(Clone)]
pub(crate) struct AppState(pub(crate) Arc<Shared>);

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppState")
    }
}

/// A JSON body, refused with a stable code: not JSON (`malformed_json`),
/// not what the route takes (`invalid_request`), another media type
/// (`unsupported_media_type`), too large (`body_too_large`). An empty body
/// is read as `{}`.
pub(crate) struct Body<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<AppState> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let json_type = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                let mime = v
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json" || mime.ends_with("+json")
            });
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::BodyTooLarge,
                    format!(
                        "the body is larger than this server accepts ({} bytes)",
                        state.0.limits.max_body_bytes
                    ),
                )
            } else {
                ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("cannot read the body: {e}"),
                )
            }
        })?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            if json_type != Some(true) {
                return Err(ApiError::new(
                    ErrorCode::UnsupportedMediaType,
                    "the body must be JSON, sent with Content-Type: application/json",
                ));
            }
            &bytes
        };
        serde_json::from_slice(text).map(Body).map_err(|e| {
            let code = match e.classify() {
                serde_json::error::Category::Data => ErrorCode::InvalidRequest,
                _ => ErrorCode::MalformedJson,
            };
            let what = if code == ErrorCode::MalformedJson {
                "the body is not JSON"
            } else {
                "the body is not what this route takes"
            };
            ApiError::new(code, format!("{what}: {e}"))
        })
    }
}

impl<T: JsonSchema> OperationInput for Body<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        Json::<T>::operation_input(ctx, operation);
    }
}

/// Query parameters; a bad one is `invalid_request`.
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.body_text()))
    }
}

impl<T: JsonSchema> OperationInput for Query<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        axum::extract::Query::<T>::operation_input(ctx, operation);
    }
}

/// The run a route is about.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RunPath {
    /// The run id.
    pub(crate) id: String,
}

/// A page size a client asked for: `default` when it did not, and a clear
/// error outside 1..=`max` (rather than silently another size).
pub(crate) fn page_limit(
    asked: Option<usize>,
    default: usize,
    max: usize,
) -> Result<usize, ApiError> {
    match asked {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("limit must be between 1 and {max} (got {n})"),
        )),
    }
}
