//! The tool seam: what a tool declares ([`ToolDefinition`], [`Tool::idempotent`]) and how it is
//! called ([`Tool::call`]), plus [`ToolSet`], the registry the engine validates calls against.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use definition::{ToolChoice, ToolDefinition};

pub(crate) mod definition;

/// How a tool call failed. The kind decides whether a retry could help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The arguments do not fit the tool; retrying the same call cannot help.
    InvalidArguments,
    /// The tool, or something it called, timed out.
    Timeout,
    /// A connection could not be made or was reset.
    Connection,
    /// A service the tool called said "too many requests" (HTTP 429).
    RateLimited,
    /// A service the tool called failed on its side (HTTP 5xx).
    Server,
    /// Any other failure; not retried.
    Failed,
}

/// A tool's failure, shown to the model as an error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{message}")]
pub struct ToolError {
    /// How it failed.
    pub kind: ToolErrorKind,
    /// What the model reads.
    pub message: String,
}

impl ToolError {
    /// An error of the given kind.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    /// A permanent failure.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Failed, message)
    }

    /// Arguments the tool cannot use.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::InvalidArguments, message)
    }

    /// True for failures that may pass on their own (timeouts, connection errors, 429, 5xx).
    pub fn transient(&self) -> bool {
        matches!(
            self.kind,
            ToolErrorKind::Timeout
                | ToolErrorKind::Connection
                | ToolErrorKind::RateLimited
                | ToolErrorKind::Server
        )
    }
}

/// A tool's successful output.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The text the model sees.
    pub content: String,
}

impl From<String> for ToolOutput {
    fn from(content: String) -> Self {
        Self { content }
    }
}

impl From<&str> for ToolOutput {
    fn from(content: &str) -> Self {
        Self { content: content.to_owned() }
    }
}

/// What a tool gets besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The id of the call being executed (unique within a run).
    pub call_id: String,
    /// Cancelled when the run is cancelled; a tool may watch it, the runtime never kills a tool.
    pub cancel: CancellationToken,
    /// The run's event sink, for tools that report what they did.
    pub events: crate::event::EventSink,
}

impl ToolContext {
    /// A context outside any run (tests, direct calls): never cancelled, events dropped.
    pub fn detached(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            cancel: CancellationToken::new(),
            events: crate::event::EventSink::none(),
        }
    }
}

/// A tool the model can call.
///
/// ```
/// use async_trait::async_trait;
/// use looprail_loop_core::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
///
/// struct Clock;
///
/// #[async_trait]
/// impl Tool for Clock {
///     fn definition(&self) -> ToolDefinition {
///         ToolDefinition::new("clock", "Current UTC time", serde_json::json!({"type": "object"}))
///     }
///     fn idempotent(&self) -> bool {
///         true // reading the time has no side effect
///     }
///     async fn call(&self, _args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok("2026-11-22T03:00:00Z".into())
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema.
    fn definition(&self) -> ToolDefinition;

    /// True when calling twice with the same arguments is as safe as calling once. Only such
    /// tools are retried automatically or re-run on resume. The default is `false`.
    fn idempotent(&self) -> bool {
        false
    }

    /// Runs the tool. `args` is already parsed JSON; validating it is the tool's job.
    async fn call(&self, args: serde_json::Value, cx: ToolContext) -> Result<ToolOutput, ToolError>;
}

/// The registered tools of a run, by name.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool under its definition's name, replacing any tool of that name.
    #[must_use]
    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        self.insert(Arc::new(tool));
        self
    }

    /// Registers a shared tool under its definition's name.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.definition().name, tool);
    }

    /// The tool of that name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Every definition, sorted by name (a stable order keeps prompts cacheable).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.values().map(|t| t.definition()).collect()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
