//! A tool that records its calls and can fail on command.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolOutput};

/// A tool that returns a fixed output, counts its calls (shared across clones), and fails the
/// first `n` calls with an error of a chosen kind.
///
/// ```
/// use looprail_loop_core::testkit::RecordingTool;
/// let tool = RecordingTool::new("send_email").output("sent");
/// assert_eq!(tool.call_count(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct RecordingTool {
    name: String,
    idempotent: bool,
    output: String,
    failures: Arc<AtomicU32>,
    failure_kind: ToolErrorKind,
    calls: Arc<AtomicU32>,
    arguments: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl RecordingTool {
    /// A side-effecting tool answering "ok".
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            idempotent: false,
            output: "ok".to_owned(),
            failures: Arc::new(AtomicU32::new(0)),
            failure_kind: ToolErrorKind::Timeout,
            calls: Arc::new(AtomicU32::new(0)),
            arguments: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Declares the tool idempotent (or not).
    #[must_use]
    pub fn idempotent(mut self, on: bool) -> Self {
        self.idempotent = on;
        self
    }

    /// Sets the output.
    #[must_use]
    pub fn output(mut self, text: impl Into<String>) -> Self {
        self.output = text.into();
        self
    }

    /// Fails the next `times` calls with `kind`.
    #[must_use]
    pub fn fail_times(self, times: u32, kind: ToolErrorKind) -> Self {
        self.failures.store(times, Ordering::SeqCst);
        Self { failure_kind: kind, ..self }
    }

    /// Calls so far (all clones share the count).
    pub fn call_count(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Arguments of every call so far.
    pub fn arguments(&self) -> Vec<serde_json::Value> {
        self.arguments.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Tool for RecordingTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            self.name.clone(),
            format!("Test tool {}", self.name),
            serde_json::json!({"type": "object", "additionalProperties": true}),
        )
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }

    async fn call(&self, args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut seen) = self.arguments.lock() {
            seen.push(args);
        }
        let failing =
            self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if failing {
            return Err(ToolError::new(
                self.failure_kind,
                format!("{} failed ({:?})", self.name, self.failure_kind),
            ));
        }
        Ok(ToolOutput::from(self.output.clone()))
    }
}
