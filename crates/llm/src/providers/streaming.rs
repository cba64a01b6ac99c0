//! What the two HTTP clients share once their protocol is spoken: the answer
//! from a streamed or a whole body, and their [`ChatModel`] and `Debug`
//! impls, so both stream, keep their key out of errors and show it only as
//! set or unset, the same way.
//!
//! [`ChatModel`]: stepwise_core::ChatModel

use stepwise_core::{ChatResponse, ModelError};

use super::errors::ErrorContext;
use super::sse::Body;

/// How a protocol builds its answer: from what a stream gave, or from a
/// whole body (a server that answered without streaming).
pub(super) trait Assemble: Sized {
    /// The answer once the stream ended.
    fn finish(self, requested_model: &str) -> Result<ChatResponse, ModelError>;

    /// The answer in a whole body, or the error it carries.
    fn whole(
        body: &str,
        ctx: &ErrorContext<'_>,
        requested_model: &str,
    ) -> Result<ChatResponse, ModelError>;
}

/// The answer once the body has been read; a whole body's text goes to
/// `on_text` at once, as a stream's would have piece by piece.
pub(super) fn answer<A: Assemble>(
    body: Body,
    assembly: A,
    ctx: &ErrorContext<'_>,
    requested_model: &str,
    on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
) -> Result<ChatResponse, ModelError> {
    match body {
        Body::Streamed => assembly.finish(requested_model),
        Body::Whole(text) => {
            let response = A::whole(&text, ctx, requested_model)?;
            on_text(&response.text);
            Ok(response)
        }
    }
}

/// Implements [`ChatModel`](stepwise_core::ChatModel), `Debug` and
/// `with_timeouts` for a client with `name`, `model`, `url`, `key`,
/// `timeouts` and `http` fields and a `chat_inner` method: every call
/// streams, errors never show the key, and `Debug` shows the key only as set
/// or unset (then any `extra` fields).
macro_rules! streaming_client {
    ($client:ident $(, $extra:ident)*) => {
        impl $client {
            /// The same client with other timeouts (see
            /// [`Timeouts`](crate::providers::Timeouts)).
            pub fn with_timeouts(
                mut self,
                timeouts: $crate::providers::Timeouts,
            ) -> Result<Self, stepwise_core::ModelError> {
                self.http = $crate::providers::http::client(&timeouts)?;
                self.timeouts = timeouts;
                Ok(self)
            }
        }

        #[async_trait::async_trait]
        impl stepwise_core::ChatModel for $client {
            fn name(&self) -> &str {
                &self.name
            }

            async fn chat(
                &self,
                request: &stepwise_core::ChatRequest,
            ) -> Result<stepwise_core::ChatResponse, stepwise_core::ModelError> {
                self.chat_streaming(request, &mut |_| {}).await
            }

            fn streams(&self) -> bool {
                true
            }

            async fn chat_streaming(
                &self,
                request: &stepwise_core::ChatRequest,
                on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
            ) -> Result<stepwise_core::ChatResponse, stepwise_core::ModelError> {
                self.chat_inner(request, on_text)
                    .await
                    .map_err(|e| $crate::providers::http::redact(e, self.key.as_ref()))
            }
        }

        /// The key shows only as set or unset.
        impl std::fmt::Debug for $client {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($client))
                    .field("name", &self.name)
                    .field("model", &self.model)
                    .field("url", &$crate::providers::http::safe_url(&self.url))
                    .field("key", &self.key)
                    .field("timeouts", &self.timeouts)
                    $(.field(stringify!($extra), &self.$extra))*
                    .finish_non_exhaustive()
            }
        }
    };
}

pub(super) use streaming_client;
