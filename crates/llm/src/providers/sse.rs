//! Reading a streamed answer: server-sent events parsed by
//! `eventsource-stream` over reqwest's byte stream, handed one by one to the
//! provider's assembler. A server that ignored `stream: true` and answered
//! with one JSON body is recognised, so the caller can parse that instead.

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::Response;
use stepwise_core::ModelError;

use super::http::{self, Timeouts};
use super::lenient::preview;

/// Whether the assembler wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The provider said the answer is complete (`[DONE]`, `message_stop`).
    Done,
}

/// What the body turned out to be.
#[derive(Debug)]
pub(crate) enum Body {
    /// Server-sent events, all handed to the callback.
    Streamed,
    /// A plain (non-streaming) body, for the provider to parse as a whole.
    Whole(String),
}

/// Feeds each event (`event` name, `data`) of the response to `on_event`
/// until the stream ends or `on_event` says [`Flow::Done`]; returns the body
/// instead if it is not an event stream. Every piece of the body is awaited
/// at most the idle timeout.
pub(crate) async fn read(
    response: Response,
    timeouts: &Timeouts,
    mut on_event: impl FnMut(&str, &str) -> Result<Flow, ModelError>,
) -> Result<Body, ModelError> {
    if !is_event_stream(&response) {
        let text = http::text(response, timeouts).await?;
        if !looks_like_events(&text) {
            return Ok(Body::Whole(text));
        }
        let once = futures::stream::iter([Ok::<_, ModelError>(text)]);
        drain(once, &mut on_event).await?;
        return Ok(Body::Streamed);
    }
    drain(http::pieces(response, timeouts), &mut on_event).await?;
    Ok(Body::Streamed)
}

/// A streamed event whose data is not the JSON the provider promised: one
/// garbled chunk, worth another attempt (see [`ModelError::CorruptStream`]).
pub(crate) fn corrupt_event(error: &serde_json::Error, data: &str) -> ModelError {
    ModelError::CorruptStream(format!(
        "a streamed event is not JSON ({error}): {}",
        preview(data)
    ))
}

async fn drain<S, B>(
    bytes: S,
    on_event: &mut impl FnMut(&str, &str) -> Result<Flow, ModelError>,
) -> Result<(), ModelError>
where
    S: Stream<Item = Result<B, ModelError>> + Unpin,
    B: AsRef<[u8]>,
{
    let mut events = bytes.eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| match e {
            EventStreamError::Transport(e) => e,
            EventStreamError::Utf8(e) => {
                ModelError::CorruptStream(format!("the event stream is not UTF-8: {e}"))
            }
            EventStreamError::Parser(e) => {
                ModelError::CorruptStream(format!("the event stream could not be parsed: {e}"))
            }
        })?;
        if on_event(&event.event, &event.data)? == Flow::Done {
            break;
        }
    }
    Ok(())
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// Some compatible servers stream events under a JSON or text content type.
fn looks_like_events(body: &str) -> bool {
    let start = body.trim_start();
    start.starts_with("data:") || start.starts_with("event:") || start.starts_with(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_are_recognised_by_their_first_line() {
        assert!(looks_like_events("\ndata: {}\n\n"));
        assert!(looks_like_events("event: message_start\ndata: {}\n\n"));
        assert!(!looks_like_events("{\"choices\": []}"));
    }

    #[tokio::test]
    async fn events_split_anywhere_are_reassembled() {
        let body = "event: a\ndata: {\"x\":\"h\u{e9}llo\"}\n\ndata: [DONE]\n\n";
        let chunks: Vec<Result<Vec<u8>, ModelError>> =
            body.as_bytes().chunks(3).map(|c| Ok(c.to_vec())).collect();
        let mut seen = Vec::new();
        drain(
            futures::stream::iter(chunks),
            &mut |name: &str, data: &str| {
                seen.push((name.to_owned(), data.to_owned()));
                Ok(Flow::Continue)
            },
        )
        .await
        .unwrap();
        assert_eq!(
            seen,
            [
                ("a".to_owned(), "{\"x\":\"h\u{e9}llo\"}".to_owned()),
                ("message".to_owned(), "[DONE]".to_owned())
            ]
        );
    }
}
