//! What a request that did not succeed gets back: an HTTP status and a JSON
//! body `{"error": {"code": "...", "message": "..."}}` whose `code` is one
//! of [`ErrorCode`] — stable, for programs to match on — and whose message
//! is for a person.

use aide::OperationOutput;
use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response, SchemaObject, StatusCode as DocStatus};
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why a request failed, as a stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No bearer token, or one this server does not know (401).
    Unauthorized,
    /// No such route (404).
    NotFound,
    /// No run with this id that the token's tenant may see (404; another
    /// tenant's run is reported exactly like a missing one).
    RunNotFound,
    /// The route exists, not with this method (405).
    MethodNotAllowed,
    /// The body is not JSON (400).
    MalformedJson,
    /// The body or query is JSON but not what the route takes: a missing or
    /// unknown field, a wrong type, a bad value (400).
    InvalidRequest,
    /// The body is not `application/json` (415).
    UnsupportedMediaType,
    /// The body is larger than the server accepts (413).
    BodyTooLarge,
    /// A notes folder or workspace outside the roots the server allows:
    /// `..`, an absolute path elsewhere, or a symbolic link out (400).
    PathNotAllowed,
    /// A notes folder under the roots that does not exist or cannot be read (400).
    NotesUnavailable,
    /// A model name the server's `[serve.models]` does not have, or a model
    /// the server cannot use now (400).
    UnknownModel,
    /// A tool set name the server's `[serve.tool_sets]` does not have, or
    /// one it cannot start (400).
    UnknownToolSet,
    /// A strategy that is not built in (400).
    UnknownStrategy,
    /// Constraints with an unknown key, or naming tools the run cannot use (400).
    InvalidConstraints,
    /// The run is not waiting for an approval (409).
    NotAwaitingApproval,
    /// The approval names an argument hash (or plan version) other than the
    /// one the run waits for: the request it answers is stale (409).
    StaleApproval,
    /// The approval names a step the run does not wait for (409).
    NotPending,
    /// The approval names nothing to approve (400).
    NothingToApprove,
    /// The run has ended (`ok`, `failed`, `cancelled`); it cannot change (409).
    RunEnded,
    /// The run stopped for review and nothing changed since: resuming it
    /// would only repeat itself (409). The message says what would have to change.
    Unchanged,
    /// This server is working on the run, or has it queued, or is acting on
    /// it (409); retry once it is at rest.
    RunBusy,
    /// Another process holds the run's lease (409).
    RunLeased,
    /// The run was not recorded by a program this server can rebuild it
    /// from (409).
    NotResumable,
    /// The queue of runs waiting for a slot is full (503).
    QueueFull,
    /// Too many event streams are open (503).
    TooManyStreams,
    /// The request took longer than the server allows (503).
    Timeout,
    /// The server is shutting down (503).
    ShuttingDown,
    /// Something went wrong inside the server (500).
    Internal,
}

impl ErrorCode {
    /// The `Retry-After` (seconds) a refusal for want of room is sent with.
    pub fn retry_after(self) -> Option<&'static str> {
        match self {
            Self::QueueFull | Self::TooManyStreams => Some("5"),
            Self::ShuttingDown => Some("30"),
            _ => None,
        }
    }

    /// The HTTP status it is sent with.
    pub fn status(self) -> StatusCode {
        use ErrorCode::*;
        match self {
            Unauthorized => StatusCode::UNAUTHORIZED,
            NotFound | RunNotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            MalformedJson | InvalidRequest | PathNotAllowed | NotesUnavailable | UnknownModel
            | UnknownToolSet | UnknownStrategy | InvalidConstraints | NothingToApprove => {
                StatusCode::BAD_REQUEST
            }
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            NotAwaitingApproval | StaleApproval | NotPending | RunEnded | Unchanged | RunBusy
            | RunLeased | NotResumable => StatusCode::CONFLICT,
            QueueFull | TooManyStreams | Timeout | ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Its name in JSON (`run_not_found`).
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            Unauthorized => "unauthorized",
            NotFound => "not_found",
            RunNotFound => "run_not_found",
            MethodNotAllowed => "method_not_allowed",
            MalformedJson => "malformed_json",
            InvalidRequest => "invalid_request",
            UnsupportedMediaType => "unsupported_media_type",
            BodyTooLarge => "body_too_large",
            PathNotAllowed => "path_not_allowed",
            NotesUnavailable => "notes_unavailable",
            UnknownModel => "unknown_model",
            UnknownToolSet => "unknown_tool_set",
            UnknownStrategy => "unknown_strategy",
            InvalidConstraints => "invalid_constraints",
            NotAwaitingApproval => "not_awaiting_approval",
            StaleApproval => "stale_approval",
            NotPending => "not_pending",
            NothingToApprove => "nothing_to_approve",
            RunEnded => "run_ended",
            Unchanged => "unchanged",
            RunBusy => "run_busy",
            RunLeased => "run_leased",
            NotResumable => "not_resumable",
            QueueFull => "queue_full",
            TooManyStreams => "too_many_streams",
            Timeout => "timeout",
            ShuttingDown => "shutting_down",
            Internal => "internal",
        }
    }
}

/// A failed request: its code and what to tell the person behind it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct ApiError {
    /// The stable name.
    pub code: ErrorCode,
    /// For a person.
    pub message: String,
}

impl ApiError {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The 404 of a run this tenant may not see (or that does not exist:
    /// the two are indistinguishable on purpose).
    pub fn run_not_found(run: &str) -> Self {
        Self::new(ErrorCode::RunNotFound, format!("no run with id {run}"))
    }

    /// A 500 whose detail is kept out of the body (it may name files).
    pub fn internal(what: &str) -> Self {
        Self::new(ErrorCode::Internal, format!("internal error: {what}"))
    }
}

/// The body of every error response.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// A stable name for programs.
    pub code: ErrorCode,
    /// For a person.
    pub message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> axum::response::Response {
        let status = self.code.status();
        let unauthorized = self.code == ErrorCode::Unauthorized;
        let mut response = (
            status,
            Json(ErrorBody {
                error: ErrorDetail {
                    code: self.code,
                    message: self.message,
                },
            }),
        )
            .into_response();
        if unauthorized {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"stepwise\""),
            );
        }
        // A refusal for want of room says when to try again.
        if let Some(seconds) = self.code.retry_after() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        }
        response
    }
}

/// The `default` response of every operation: an [`ErrorBody`].
fn error_response(ctx: &mut GenContext) -> Response {
    let json_schema = ctx.schema.subschema_for::<ErrorBody>();
    Response {
        description: "The request failed: `error.code` says why (see ErrorCode).".to_owned(),
        content: [(
            "application/json".to_owned(),
            MediaType {
                schema: Some(SchemaObject {
                    json_schema,
                    example: None,
                    external_docs: None,
                }),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect(),
        ..Default::default()
    }
}

impl OperationOutput for ApiError {
    type Inner = ErrorBody;

    fn operation_response(ctx: &mut GenContext, _operation: &mut Operation) -> Option<Response> {
        Some(error_response(ctx))
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        _operation: &mut Operation,
    ) -> Vec<(Option<DocStatus>, Response)> {
        vec![(None, error_response(ctx))]
    }
}

/// A handler's result.
pub(crate) type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_named_as_serde_names_it() {
        use ErrorCode::*;
        for code in [
            Unauthorized,
            NotFound,
            RunNotFound,
            MethodNotAllowed,
            MalformedJson,
            InvalidRequest,
            UnsupportedMediaType,
            BodyTooLarge,
            PathNotAllowed,
            NotesUnavailable,
            UnknownModel,
            UnknownToolSet,
            UnknownStrategy,
            InvalidConstraints,
            NotAwaitingApproval,
            StaleApproval,
            NotPending,
            NothingToApprove,
            RunEnded,
            Unchanged,
            RunBusy,
            RunLeased,
            NotResumable,
            QueueFull,
            TooManyStreams,
            Timeout,
            ShuttingDown,
            Internal,
        ] {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::Value::String(code.as_str().to_owned()))
            );
        }
    }
}
