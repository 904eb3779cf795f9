//! Record a run's model calls to JSONL, and replay them later without a network (for tests
//! and bug reports).
//!
//! Each line is `{"request": {...}, "response": {"ok": ...} | {"error": ...}}`; the request is
//! the provider-neutral [`ModelRequest`] as sent.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use futures_util::StreamExt;
use looprail_loop_core::provider::{
    ModelRequest, ModelResponse, Provider, ProviderError, ProviderErrorKind, ResponseStream, StreamEvent,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Recorded {
    Ok(ModelResponse),
    Error(ProviderError),
}

#[derive(Serialize, Deserialize)]
struct Line {
    request: Value,
    response: Recorded,
}

/// Wraps a provider and appends every call to a JSONL file.
#[derive(Debug)]
pub struct Recorder<P> {
    inner: P,
    file: std::sync::Arc<Mutex<File>>,
}

impl<P: Provider> Recorder<P> {
    /// Records `inner`'s calls into `path` (appending).
    pub fn new(inner: P, path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self { inner, file: std::sync::Arc::new(Mutex::new(file)) })
    }
}

fn write_line(file: &Mutex<File>, request: Value, result: &Result<ModelResponse, ProviderError>) {
    let response = match result {
        Ok(r) => Recorded::Ok(r.clone()),
        Err(e) => Recorded::Error(e.clone()),
    };
    let Ok(mut text) = serde_json::to_string(&Line { request, response }) else { return };
    text.push('\n');
    let mut file = file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Err(error) = file.write_all(text.as_bytes()) {
        tracing::warn!(%error, "could not record a model call");
    }
}

#[async_trait]
impl<P: Provider> Provider for Recorder<P> {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn supports_tool_choice(&self) -> bool {
        self.inner.supports_tool_choice()
    }

    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let result = self.inner.complete(request).await;
        write_line(&self.file, serde_json::to_value(request).unwrap_or_default(), &result);
        result
    }

    async fn stream(&self, request: &ModelRequest<'_>) -> Result<ResponseStream, ProviderError> {
        let snapshot = serde_json::to_value(request).unwrap_or_default();
        let stream = match self.inner.stream(request).await {
            Ok(stream) => stream,
            Err(error) => {
                write_line(&self.file, snapshot, &Err(error.clone()));
                return Err(error);
            }
        };
        let file = std::sync::Arc::clone(&self.file);
        let mut snapshot = Some(snapshot);
        Ok(Box::pin(stream.map(move |item| {
            if let StreamEvent::Finished(result) = &item
                && let Some(request) = snapshot.take()
            {
                write_line(&file, request, result);
            }
            item
        })))
    }
}

/// A replay failure.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read the recording: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not a recorded call.
    #[error("line {line} of the recording is not a recorded call: {reason}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// Why.
        reason: String,
    },
}

struct Expected {
    purpose: Value,
    message_count: usize,
    response: Recorded,
}

/// Answers calls from a recording, in order. A call whose purpose or message count differs
/// from the recorded one fails with an error saying where the run diverged.
pub struct Replay {
    model: String,
    calls: Mutex<VecDeque<Expected>>,
    served: Mutex<usize>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay").field("model", &self.model).finish()
    }
}

impl Replay {
    /// Loads a recording written by [`Recorder`].
    pub fn from_jsonl(path: &Path) -> Result<Self, ReplayError> {
        let text = std::fs::read_to_string(path)?;
        let mut calls = VecDeque::new();
        let mut model = String::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let parsed: Line = serde_json::from_str(line)
                .map_err(|e| ReplayError::BadLine { line: n + 1, reason: e.to_string() })?;
            if let Recorded::Ok(response) = &parsed.response
                && model.is_empty()
            {
                model = response.model.clone();
            }
            let message_count = parsed.request.get("messages").and_then(Value::as_array).map_or(0, Vec::len);
            let purpose = parsed.request.get("purpose").cloned().unwrap_or(Value::Null);
            calls.push_back(Expected { purpose, message_count, response: parsed.response });
        }
        Ok(Self { model, calls: Mutex::new(calls), served: Mutex::new(0) })
    }

    /// Calls left in the recording.
    pub fn remaining(&self) -> usize {
        self.calls.lock().map(|c| c.len()).unwrap_or(0)
    }
}

#[async_trait]
impl Provider for Replay {
    fn model(&self) -> &str {
        &self.model
    }

    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let mut served = self.served.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *served += 1;
        let call = *served;
        let next = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop_front();
        let Some(expected) = next else {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!("the recording has no call {call}"),
            ));
        };
        let purpose = serde_json::to_value(request.purpose).unwrap_or(Value::Null);
        if purpose != expected.purpose || request.messages.len() != expected.message_count {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "the run diverged from the recording at call {call}: recorded {} with {} messages, got {} with {}",
                    expected.purpose,
                    expected.message_count,
                    purpose,
                    request.messages.len()
                ),
            ));
        }
        match expected.response {
            Recorded::Ok(response) => Ok(response),
            Recorded::Error(error) => Err(error),
        }
    }
}
