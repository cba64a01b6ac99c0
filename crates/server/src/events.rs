//! `GET /v1/runs/{id}/events`: a run's event log, as a JSON page or as a
//! live `text/event-stream`.
//!
//! The stream reads the log from the store (the source of truth), in order,
//! from the event after `Last-Event-ID` (or `after`): each SSE event's `id`
//! is the event's `seq`, its `event` the kind, its `data` the event as
//! JSON. It never skips or repeats a `seq`, so a client that reconnects with
//! the last id it saw gets exactly the events after it. Once the run has
//! ended (`ok`, `failed`, `cancelled`) and every event is sent, a last
//! `end` event (no id) says so and the stream closes; a paused run's
//! stream stays open, as the run may go on.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use aide::generate::GenContext;
use aide::openapi::{
    HeaderStyle, MediaType, Operation, Parameter, ParameterData, ParameterSchemaOrContent,
    ReferenceOr, Response, SchemaObject, StatusCode as DocStatus,
};
use aide::{OperationInput, OperationOutput};
use axum::Json;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::header::ACCEPT;
use axum::http::request::Parts;
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, KeepAliveStream, Sse};
use futures::stream::{self, BoxStream, StreamExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stepwise_core::{Event, RunId, RunState};
use tokio::sync::watch;

use crate::Shared;
use crate::auth::Tenant;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::{AppState, Query, RunPath, page_limit};
use crate::types::ApiStatus;

/// The most events a JSON page holds.
const MAX_PAGE: usize = 5_000;

/// `GET /v1/runs/{id}/events` query.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Only events with a `seq` above this (default 0: from the first).
    /// A stream's `Last-Event-ID` header takes precedence.
    pub after: Option<u64>,
    /// Most events in a JSON page (default and maximum 5000; 0 or above 5000 is `invalid_request`).
    pub limit: Option<usize>,
}

/// A page of a run's log.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EventPage {
    /// The run.
    pub run_id: String,
    /// Its status now.
    pub status: ApiStatus,
    /// The events, in order.
    pub events: Vec<Event>,
    /// The `seq` of the log's last event.
    pub last_seq: u64,
}

/// How the client wants the events: `Accept` and `Last-Event-ID`.
pub(crate) struct StreamPrefs {
    sse: bool,
    last_event_id: Option<u64>,
}

impl<S: Send + Sync> FromRequestParts<S> for StreamPrefs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let sse = parts
            .headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.to_ascii_lowercase().contains("text/event-stream"));
        let last_event_id = match parts.headers.get("last-event-id") {
            None => None,
            Some(v) => {
                let text = v.to_str().unwrap_or("").trim();
                if text.is_empty() {
                    None
                } else {
                    Some(text.parse::<u64>().map_err(|_| {
                        ApiError::new(
                            ErrorCode::InvalidRequest,
                            "Last-Event-ID must be the seq (a whole number) of the last event received",
                        )
                    })?)
                }
            }
        };
        Ok(StreamPrefs { sse, last_event_id })
    }
}

fn header_param(ctx: &mut GenContext, name: &str, description: &str) -> ReferenceOr<Parameter> {
    ReferenceOr::Item(Parameter::Header {
        parameter_data: ParameterData {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            required: false,
            format: ParameterSchemaOrContent::Schema(SchemaObject {
                json_schema: ctx.schema.subschema_for::<String>(),
                example: None,
                external_docs: None,
            }),
            extensions: Default::default(),
            deprecated: None,
            example: None,
            examples: Default::default(),
            explode: None,
        },
        style: HeaderStyle::Simple,
    })
}

impl OperationInput for StreamPrefs {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        let accept = header_param(
            ctx,
            "Accept",
            "`text/event-stream` for a live stream; anything else for a JSON page.",
        );
        let last = header_param(
            ctx,
            "Last-Event-ID",
            "Resume a stream after the event with this `seq`.",
        );
        operation.parameters.push(accept);
        operation.parameters.push(last);
    }
}

/// A JSON page or a live stream.
pub(crate) enum EventsResponse {
    Page(Json<EventPage>),
    Stream(Sse<KeepAliveStream<BoxStream<'static, Result<SseEvent, Infallible>>>>),
}

impl IntoResponse for EventsResponse {
    fn into_response(self) -> axum::response::Response {
        match self {
            EventsResponse::Page(page) => page.into_response(),
            EventsResponse::Stream(sse) => {
                let mut response = sse.into_response();
                response.headers_mut().insert(
                    "x-accel-buffering",
                    axum::http::HeaderValue::from_static("no"),
                );
                response
            }
        }
    }
}

impl OperationOutput for EventsResponse {
    type Inner = EventPage;

    fn operation_response(ctx: &mut GenContext, _operation: &mut Operation) -> Option<Response> {
        let page = ctx.schema.subschema_for::<EventPage>();
        let event = ctx.schema.subschema_for::<Event>();
        let media = |json_schema| MediaType {
            schema: Some(SchemaObject {
                json_schema,
                example: None,
                external_docs: None,
            }),
            ..Default::default()
        };
        Some(Response {
            description: "A JSON page of the log, or (Accept: text/event-stream) a stream whose every `data` is one Event and whose `id` is its seq, then an `end` event once the run has ended.".to_owned(),
            content: [
                ("application/json".to_owned(), media(page)),
                ("text/event-stream".to_owned(), media(event)),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        })
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<DocStatus>, Response)> {
        Self::operation_response(ctx, operation)
            .map(|r| vec![(Some(DocStatus::Code(200)), r)])
            .unwrap_or_default()
    }
}

pub(crate) async fn events(
    tenant: Tenant,
    State(AppState(shared)): State<AppState>,
    Path(path): Path<RunPath>,
    prefs: StreamPrefs,
    Query(query): Query<EventsQuery>,
) -> ApiResult<EventsResponse> {
    let state = shared.owned(&tenant, &path.id).await?;
    let run = state.run_id.clone();
    if !prefs.sse {
        let after = query.after.unwrap_or(0);
        let limit = page_limit(query.limit, MAX_PAGE, MAX_PAGE)?;
        let events: Vec<Event> = state
            .execution_history
            .iter()
            .filter(|e| e.seq > after)
            .take(limit)
            .cloned()
            .collect();
        return Ok(EventsResponse::Page(Json(EventPage {
            run_id: run.to_string(),
            status: ApiStatus::of(state.status, shared.phase(&run).await),
            events,
            last_seq: state.execution_history.len() as u64,
        })));
    }
    if shared.jobs.is_closed() {
        return Err(crate::jobs::shutting_down());
    }
    let slot = StreamSlot::take(&shared, &tenant.0)?;
    let after = prefs.last_event_id.or(query.after).unwrap_or(0);
    // The stream keeps the run's fold, not its log: what it sends is read
    // from the store a page at a time, so a client that reads slowly (or
    // never) holds one page, not the whole log.
    let mut state = state;
    state.forget_history();
    let follow = Follow {
        wake: shared.hub.subscribe(&run),
        shutdown: shared.shutdown.subscribe(),
        poll: Duration::from_millis(shared.limits.poll_ms),
        shared,
        run,
        state,
        after,
        queue: VecDeque::new(),
        done: false,
        _slot: slot,
    };
    let stream = stream::unfold(follow, |mut f| async move {
        f.next().await.map(|event| (Ok::<_, Infallible>(event), f))
    })
    .boxed();
    Ok(EventsResponse::Stream(Sse::new(stream).keep_alive(
        KeepAlive::new().interval(Duration::from_secs(15)),
    )))
}

/// One open stream, counted against `max_streams` and its tenant's
/// `max_streams_per_tenant`.
struct StreamSlot(Arc<Shared>, String);

impl StreamSlot {
    fn take(shared: &Arc<Shared>, tenant: &str) -> Result<StreamSlot, ApiError> {
        let mut per_tenant = shared
            .tenant_streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mine = per_tenant.get(tenant).copied().unwrap_or(0);
        let own = shared.limits.max_streams_per_tenant;
        if mine >= own {
            return Err(ApiError::new(
                ErrorCode::TooManyStreams,
                format!(
                    "this tenant has {own} event streams open already (max_streams_per_tenant); close one or try again later"
                ),
            ));
        }
        let max = shared.limits.max_streams;
        let taken = shared
            .streams
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            });
        match taken {
            Ok(_) => {
                per_tenant.insert(tenant.to_owned(), mine + 1);
                Ok(StreamSlot(Arc::clone(shared), tenant.to_owned()))
            }
            Err(_) => Err(ApiError::new(
                ErrorCode::TooManyStreams,
                format!("{max} event streams are open already; try again later"),
            )),
        }
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut per_tenant = self
            .0
            .tenant_streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = per_tenant.get_mut(&self.1) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                per_tenant.remove(&self.1);
            }
        }
        self.0.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Events read from the store at once for a stream.
const PAGE: usize = 256;

/// A stream following one run.
struct Follow {
    shared: Arc<Shared>,
    run: RunId,
    /// The run folded as far as the stream has read the log.
    state: RunState,
    /// The `seq` of the last event sent.
    after: u64,
    queue: VecDeque<Event>,
    wake: watch::Receiver<u64>,
    shutdown: watch::Receiver<bool>,
    poll: Duration,
    done: bool,
    _slot: StreamSlot,
}

impl Follow {
    /// The next SSE event, or `None` when the stream ends.
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if self.done {
                return None;
            }
            if let Some(event) = self.queue.pop_front() {
                self.after = event.seq;
                return Some(sse_event(&event));
            }
            // Whatever is recorded from here on wakes us again.
            self.wake.borrow_and_update();
            let known = self.state.last_seq();
            if self.after < known {
                // Folded already, not sent yet: the next page of the log.
                match self
                    .shared
                    .store
                    .events_since(&self.run, self.after, PAGE)
                    .await
                {
                    Ok(page) if !page.is_empty() => {
                        self.queue
                            .extend(page.into_iter().filter(|e| e.seq <= known));
                        continue;
                    }
                    Ok(_) => self.after = known,
                    Err(e) => {
                        self.done = true;
                        return Some(end_event(&format!("the run cannot be read: {e}"), None));
                    }
                }
            }
            match self.shared.store.events_since(&self.run, known, PAGE).await {
                Ok(new) if !new.is_empty() => {
                    for event in &new {
                        if self.state.apply(event).is_err() {
                            // Cannot happen with one writer per run; read it afresh.
                            match self.shared.store.state(&self.run).await {
                                Ok(state) => self.state = state,
                                Err(_) => {
                                    self.done = true;
                                    return Some(end_event("the run cannot be read", None));
                                }
                            }
                            break;
                        }
                    }
                    // Folded; sent from the log a page at a time.
                    self.state.forget_history();
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(end_event(&format!("the run cannot be read: {e}"), None));
                }
            }
            if self.state.status.has_ended() {
                self.done = true;
                return Some(end_event("the run has ended", Some(&self.state)));
            }
            if *self.shutdown.borrow() {
                return None;
            }
            tokio::select! {
                changed = self.wake.changed() => {
                    if changed.is_err() {
                        self.wake = self.shared.hub.subscribe(&self.run);
                    }
                }
                _ = tokio::time::sleep(self.poll) => {}
                _ = self.shutdown.changed() => {}
            }
        }
    }
}

fn sse_event(event: &Event) -> SseEvent {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned());
    SseEvent::default()
        .id(event.seq.to_string())
        .event(event.kind.name())
        .data(data)
}

fn end_event(why: &str, state: Option<&RunState>) -> SseEvent {
    let body = serde_json::json!({
        "status": state.map(|s| s.status.as_str()),
        "last_seq": state.map(RunState::last_seq),
        "reason": why,
    });
    SseEvent::default().event("end").data(body.to_string())
}
