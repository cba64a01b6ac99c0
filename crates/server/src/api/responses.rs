//! What a handler answers besides plain JSON: a 202 with a `Location`, and
//! a run's final output as its schema names it.

use aide::OperationOutput;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response, StatusCode as DocStatus};
use axum::Json;
use axum::http::header::LOCATION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::IntoResponse;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use stepwise_core::FinalOutput;

/// A 202 with a JSON body and a `Location` (the run).
pub(crate) struct Accepted<T>(pub(super) T, pub(super) String);

impl<T: Serialize> IntoResponse for Accepted<T> {
    fn into_response(self) -> axum::response::Response {
        let mut response = (StatusCode::ACCEPTED, Json(self.0)).into_response();
        if let Ok(location) = HeaderValue::from_str(&self.1) {
            response.headers_mut().insert(LOCATION, location);
        }
        response
    }
}

impl<T: JsonSchema> OperationOutput for Accepted<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<Response> {
        Json::<T>::operation_response(ctx, operation)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<DocStatus>, Response)> {
        Self::operation_response(ctx, operation)
            .map(|r| vec![(Some(DocStatus::Code(202)), r)])
            .unwrap_or_default()
    }
}

/// A run's output: exactly what `stepwise show RUN --json` prints (seed
/// 001's `final_output`, with `cost` when the server prices the model).
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub(crate) struct RunOutput(pub(super) Value);

impl JsonSchema for RunOutput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        FinalOutput::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        FinalOutput::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        FinalOutput::json_schema(generator)
    }
}
