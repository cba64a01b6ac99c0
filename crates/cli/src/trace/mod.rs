//! OpenTelemetry traces over OTLP/HTTP (protobuf), on when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is
//! set (`stepwise run`, `resume`, `serve`, `worker`), absent otherwise: no
//! exporter, no thread, no sink. Spans are derived from the events a run
//! records ([`spans`]), by a sink after the store's, so they describe only
//! what is durable, and a run's path never waits on the collector: finished
//! spans go into the batch processor's bounded queue (dropped when it is
//! full) and its own thread exports them with a short timeout. A failed
//! export drops its spans and warns once. See docs/tracing.md.

mod keys;
pub(crate) mod spans;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use opentelemetry_otlp::{RetryPolicy, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanExporter, SpanProcessor,
};
use stepwise_core::event::{Event, EventSink, SinkError};
use stepwise_core::{Engine, RunId, Store};

use spans::Spans;

/// The variables that turn tracing on (either one).
pub(crate) const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// How long one export may take unless `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT`
/// says otherwise: short, since nothing waits for it but the exit flush.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long the exit flush may take, at most.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Spans waiting for export at most; more are dropped.
const QUEUE: usize = 4096;

/// The process's exporter: one per process, whatever number of runs it drives.
struct Export {
    processor: BatchSpanProcessor,
    content: bool,
}

static EXPORT: OnceLock<Export> = OnceLock::new();

/// Flushes the spans still queued when dropped (at the command's end).
#[derive(Debug)]
pub(crate) struct Flush;

impl Drop for Flush {
    fn drop(&mut self) {
        if let Some(export) = EXPORT.get() {
            let _ = export.processor.shutdown_with_timeout(FLUSH_TIMEOUT);
        }
    }
}

fn endpoint() -> Option<String> {
    ENDPOINT_VARS
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
}

/// Starts the exporter if an OTLP endpoint is set; `content` adds prompts,
/// answers, tool arguments and results to the spans (`--trace-content`).
pub(crate) fn init(content: bool) -> anyhow::Result<Option<Flush>> {
    let Some(endpoint) = endpoint() else {
        return Ok(None);
    };
    // Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        // A failed batch is dropped, not retried: retries (up to ~1 s of
        // backoff by default) would only delay the exit flush of a CLI run
        // whose collector is down.
        .with_retry_policy(RetryPolicy::disabled());
    let timeout_set = [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .any(|var| std::env::var_os(var).is_some());
    if !timeout_set {
        builder = builder.with_timeout(EXPORT_TIMEOUT);
    }
    let exporter = builder
        .build()
        .map_err(|e| anyhow::anyhow!("cannot export traces to {endpoint}: {e}"))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("stepwise");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let mut processor = BatchSpanProcessor::builder(Warned {
        inner: exporter,
        endpoint,
        warned: AtomicBool::new(false),
    })
    .with_batch_config(
        BatchConfigBuilder::default()
            .with_max_queue_size(QUEUE)
            .build(),
    )
    .build();
    processor.set_resource(&resource);
    let _ = EXPORT.set(Export { processor, content });
    Ok(Some(Flush))
}

/// The sink that traces run `run`, continuing after `prior` (its events
/// so far), or `None` when tracing is off.
pub(crate) fn sink(run: &RunId, prior: &[Event]) -> Option<std::sync::Arc<dyn EventSink>> {
    let export = EXPORT.get()?;
    Some(std::sync::Arc::new(TraceSink {
        run: run.clone(),
        spans: Mutex::new(Spans::new(run.as_str(), export.content, prior)),
        export,
    }))
}

/// `engine` tracing run `run` (after its events so far, `prior`) when
/// tracing is on; after the sinks it has, so spans follow durable events.
pub(crate) fn traced(engine: Engine, run: &RunId, prior: &[Event]) -> Engine {
    match sink(run, prior) {
        Some(sink) => engine.with_sink(sink),
        None => engine,
    }
}

/// [`traced`], reading the run's events so far from `store` (only when
/// tracing is on).
pub(crate) async fn traced_from(engine: Engine, run: &RunId, store: &dyn Store) -> Engine {
    if EXPORT.get().is_none() {
        return engine;
    }
    match store.events(run).await {
        Ok(prior) => traced(engine, run, &prior),
        Err(stepwise_core::store::StoreError::NotFound(_)) => traced(engine, run, &[]),
        Err(e) => {
            crate::output::warn(&format!(
                "run {run} is not traced: cannot read its events: {e}"
            ));
            engine
        }
    }
}

/// Turns a run's events into spans and queues them; never fails the run.
struct TraceSink {
    run: RunId,
    spans: Mutex<Spans>,
    export: &'static Export,
}

impl std::fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceSink").field("run", &self.run).finish()
    }
}

impl TraceSink {
    fn send(&self, spans: Vec<SpanData>) {
        for span in spans {
            self.export.processor.on_end(span);
        }
    }
}

impl EventSink for TraceSink {
    fn record<'a>(
        &'a self,
        run: &'a RunId,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        if *run == self.run {
            let spans = match self.spans.lock() {
                Ok(mut spans) => spans.apply(event),
                Err(poisoned) => poisoned.into_inner().apply(event),
            };
            self.send(spans);
        }
        Box::pin(async { Ok(()) })
    }
}

impl Drop for TraceSink {
    /// The engine is done with the run (it stopped, or the process is
    /// stopping it): what is still open is sent.
    fn drop(&mut self) {
        let spans = match self.spans.get_mut() {
            Ok(spans) => spans.finish(),
            Err(poisoned) => poisoned.into_inner().finish(),
        };
        self.send(spans);
    }
}

/// The OTLP exporter, warning once on stderr when an export fails (the
/// spans of that batch are dropped; the run goes on).
#[derive(Debug)]
struct Warned<E> {
    inner: E,
    endpoint: String,
    warned: AtomicBool,
}

impl<E: SpanExporter> SpanExporter for Warned<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(e) = &result
            && !self.warned.swap(true, Ordering::SeqCst)
        {
            crate::output::warn(&format!(
                "cannot export traces to {}: {e}; their spans are dropped (shown once)",
                self.endpoint
            ));
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
