//! A fake model provider: an axum server on 127.0.0.1:0 that answers each
//! request with the next scripted [`Reply`] — recorded OpenAI and Anthropic
//! bodies, whole or as server-sent events sent in small pieces, after an
//! optional delay, optionally cut mid-stream or left silent — and records
//! every request (headers and JSON body) for the test to inspect. wiremock
//! cannot stream a body piece by piece, cut it or hang in it, hence this.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::task::JoinHandle;

/// Recorded provider bodies, exactly as the providers send them.
pub(crate) mod recordings {
    pub(crate) const OPENAI_TEXT: &str = include_str!("recordings/openai_text.sse");
    pub(crate) const OPENAI_TOOL_CALLS: &str = include_str!("recordings/openai_tool_calls.sse");
    pub(crate) const OPENAI_EMPTY_ANSWER: &str = include_str!("recordings/openai_empty_answer.sse");
    pub(crate) const OPENAI_WHOLE: &str = include_str!("recordings/openai_whole.json");
    pub(crate) const OPENAI_NO_CHOICES: &str = include_str!("recordings/openai_no_choices.json");
    pub(crate) const ANTHROPIC_TEXT: &str = include_str!("recordings/anthropic_text.sse");
    pub(crate) const ANTHROPIC_TOOL_USE: &str = include_str!("recordings/anthropic_tool_use.sse");
    pub(crate) const ANTHROPIC_OVERLOADED_MID_STREAM: &str =
        include_str!("recordings/anthropic_overloaded_mid_stream.sse");
    pub(crate) const ANTHROPIC_WHOLE: &str = include_str!("recordings/anthropic_whole.json");
}

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    /// Path and query, e.g. `/v1/chat/completions`.
    pub(crate) path: String,
    /// Lower-case names.
    pub(crate) headers: BTreeMap<String, String>,
    /// The body as JSON (`Value::Null` if it was not JSON).
    pub(crate) body: Value,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// What the fake answers with.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: ReplyBody,
    delay: Duration,
}

#[derive(Debug, Clone)]
enum ReplyBody {
    Whole(String),
    /// Sent piece by piece; `cut` ends the connection instead of the body,
    /// `hang` keeps it open and silent after the last piece.
    Pieces {
        pieces: Vec<String>,
        cut: bool,
        hang: bool,
        /// Waited before each piece after the first (a model writing).
        pace: Duration,
    },
}

/// Pieces this small split events, lines and JSON anywhere.
const PIECE: usize = 23;

impl Reply {
    /// A whole JSON body.
    pub(crate) fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: ReplyBody::Whole(body.to_owned()),
            delay: Duration::ZERO,
        }
    }

    /// A 200 event stream, sent in small pieces.
    pub(crate) fn sse(body: &str) -> Self {
        Self {
            status: 200,
            headers: vec![(
                "content-type".into(),
                "text/event-stream; charset=utf-8".into(),
            )],
            body: ReplyBody::Pieces {
                pieces: pieces(body),
                cut: false,
                hang: false,
                pace: Duration::ZERO,
            },
            delay: Duration::ZERO,
        }
    }

    /// The events of `body` before the first one containing `marker`, ending
    /// normally: a stream that stops before the model said it finished.
    pub(crate) fn sse_until(body: &str, marker: &str) -> Self {
        let kept: String = body
            .split_inclusive("\n\n")
            .take_while(|event| !event.contains(marker))
            .collect();
        Self::sse(&kept)
    }

    /// The first half of `body`, then the connection is reset.
    pub(crate) fn sse_cut(body: &str) -> Self {
        let mut reply = Self::sse(body);
        if let ReplyBody::Pieces { pieces, cut, .. } = &mut reply.body {
            pieces.truncate(pieces.len() / 2);
            *cut = true;
        }
        reply
    }

    /// A 200 event stream that sends `body` (may be empty), then nothing
    /// more, the connection left open: a server that went silent.
    pub(crate) fn sse_then_silence(body: &str) -> Self {
        let mut reply = Self::sse(body);
        if let ReplyBody::Pieces { hang, .. } = &mut reply.body {
            *hang = true;
        }
        reply
    }

    #[must_use]
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A 200 event stream sent one event at a time, `ms` apart: a model
    /// that writes its answer slowly.
    pub(crate) fn sse_paced(body: &str, ms: u64) -> Self {
        let mut reply = Self::sse(body);
        if let ReplyBody::Pieces { pieces, pace, .. } = &mut reply.body {
            *pieces = body.split_inclusive("\n\n").map(str::to_owned).collect();
            *pace = Duration::from_millis(ms);
        }
        reply
    }

    /// Waits this long before answering at all.
    #[must_use]
    pub(crate) fn delay(mut self, ms: u64) -> Self {
        self.delay = Duration::from_millis(ms);
        self
    }
}

fn pieces(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in body.chars() {
        current.push(c);
        if current.len() >= PIECE {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[derive(Debug, Default)]
struct Script {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
}

type Shared = Arc<Mutex<Script>>;

/// The running fake; stops when dropped.
#[derive(Debug)]
pub(crate) struct FakeServer {
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    script: Shared,
    task: JoinHandle<()>,
}

impl FakeServer {
    pub(crate) async fn start() -> Self {
        let script = Shared::default();
        let app = Router::new().fallback(answer).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, script, task }
    }

    /// Queues the next answer.
    pub(crate) fn push(&self, reply: Reply) -> &Self {
        self.script.lock().unwrap().replies.push_back(reply);
        self
    }

    /// Every request so far, in order.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }

    /// The last request's JSON body.
    pub(crate) fn last_body(&self) -> Value {
        self.requests()
            .last()
            .map(|r| r.body.clone())
            .unwrap_or(Value::Null)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    State(script): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reply = {
        let mut script = script.lock().unwrap();
        script.requests.push(Recorded {
            method: method.to_string(),
            path: uri
                .path_and_query()
                .map(ToString::to_string)
                .unwrap_or_default(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                .collect(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        script.replies.pop_front()
    };
    let Some(reply) = reply else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "fake: no reply queued").into_response();
    };
    tokio::time::sleep(reply.delay).await;
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    let body = match reply.body {
        ReplyBody::Whole(text) => Body::from(text),
        ReplyBody::Pieces {
            pieces,
            cut,
            hang,
            pace,
        } => {
            let sent = futures::StreamExt::then(
                futures::stream::iter(pieces.into_iter().enumerate()),
                move |(i, piece)| async move {
                    if i > 0 && !pace.is_zero() {
                        tokio::time::sleep(pace).await;
                    }
                    Ok::<_, std::io::Error>(piece)
                },
            );
            let reset = cut.then(|| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "fake: cut",
                ))
            });
            let body = futures::StreamExt::chain(sent, futures::stream::iter(reset));
            if hang {
                Body::from_stream(futures::StreamExt::chain(body, futures::stream::pending()))
            } else {
                Body::from_stream(body)
            }
        }
    };
    response.body(body).unwrap()
}
