//! A planner that streams its draft at a fixed rate, for tests and the
//! streaming bench: like a model writing one step every `interval`.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::time::Instant;

use crate::plan::DraftPlan;
use crate::roles::{PlanRequest, Planner, Reply, RoleError, StepSender};

/// Writes step `i` of its draft `i × interval` after it is asked (from 1),
/// handing each over at once when streaming; asked whole, it answers after
/// the same time, with everything. Remembers when it wrote each step.
#[derive(Debug)]
pub struct StreamingPlanner {
    steps: Vec<Value>,
    interval: Duration,
    streams: bool,
    written: Mutex<Vec<Instant>>,
}

impl StreamingPlanner {
    /// Streams `steps` (raw plan JSON), one every `interval`.
    pub fn new(steps: Vec<Value>, interval: Duration) -> Self {
        Self {
            steps,
            interval,
            streams: true,
            written: Mutex::new(Vec::new()),
        }
    }

    /// The same planner, answering only whole (`streams()` is false).
    #[must_use]
    pub fn whole(mut self) -> Self {
        self.streams = false;
        self
    }

    /// When each step was written, in order (the last call's).
    pub fn written(&self) -> Vec<Instant> {
        self.written.lock().map(|w| w.clone()).unwrap_or_default()
    }

    async fn write(&self, steps: Option<&StepSender>) -> Reply<DraftPlan> {
        let mut written = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            tokio::time::sleep(self.interval).await;
            written.push(Instant::now());
            if let Some(sender) = steps {
                sender.send(step.clone());
            }
        }
        if let Ok(mut w) = self.written.lock() {
            *w = written;
        }
        let mut draft = serde_json::Map::new();
        draft.insert("steps".to_owned(), Value::Array(self.steps.clone()));
        Reply::free(DraftPlan(Value::Object(draft)))
    }
}

#[async_trait]
impl Planner for StreamingPlanner {
    async fn plan(&self, _request: PlanRequest<'_>) -> Result<Reply<DraftPlan>, RoleError> {
        Ok(self.write(None).await)
    }

    fn streams(&self) -> bool {
        self.streams
    }

    async fn plan_streaming(
        &self,
        _request: PlanRequest<'_>,
        steps: StepSender,
    ) -> Result<Reply<DraftPlan>, RoleError> {
        Ok(self.write(Some(&steps)).await)
    }
}
