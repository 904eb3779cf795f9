//! [`Agent::builder`]: a run with every default of the feature catalogue switched on.

use std::sync::Arc;

use looprail_compaction::AutoCompaction;
use looprail_guardrails::{DegenerateReplies, default_stack};
use looprail_loop_core::engine::{EngineError, Run};
use looprail_loop_core::event::EventSink;
use looprail_loop_core::outcome::Outcome;
use looprail_loop_core::provider::Provider;
use looprail_loop_core::tool::ToolSet;
use looprail_loop_core::{Driver, DriverError};
use looprail_retry::{Retry, RetryingExecutor};

use crate::config::LooprailConfig;

/// An agent: a provider (retried), tools (retried when idempotent), the default guard stack
/// (budgets, time limits, todo nudge, loop detection with the escalation ladder, error
/// reflection), auto-compaction with the recovery ladder, and the fallback reply.
pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: ToolSet,
    config: LooprailConfig,
    system: Option<String>,
    events: EventSink,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("model", &self.provider.model()).field("tools", &self.tools).finish()
    }
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    provider: Option<Arc<dyn Provider>>,
    tools: ToolSet,
    config: LooprailConfig,
    system: Option<String>,
    events: EventSink,
}

/// Why an agent could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No provider was given.
    #[error("the agent has no provider: call `provider(...)`")]
    MissingProvider,
    /// The config or the run is invalid.
    #[error(transparent)]
    Engine(EngineError),
    /// The run failed to execute.
    #[error(transparent)]
    Driver(DriverError),
}

impl Agent {
    /// Starts building an agent with the default configuration.
    pub fn builder() -> AgentBuilder {
        AgentBuilder {
            provider: None,
            tools: ToolSet::new(),
            config: LooprailConfig::default(),
            system: None,
            events: EventSink::none(),
        }
    }

    /// Runs one user request to its outcome.
    pub async fn run(&self, user: &str) -> Result<Outcome, AgentError> {
        let mut builder = Run::builder(self.config.loop_.clone())
            .user(user)
            .tools(self.tools.definitions())
            .policy(AutoCompaction::new(self.config.compaction.clone()));
        if let Some(system) = &self.system {
            builder = builder.system(system.clone());
        }
        for guard in default_stack(&self.config.guardrails) {
            builder = builder.boxed_guard(guard);
        }
        let mut run = builder.build().map_err(AgentError::Engine)?;
        let watch = DegenerateReplies::new(self.config.guardrails.degenerate_reply.clone());
        let driver = Driver::new(Arc::clone(&self.provider), self.tools.clone())
            .with_executor(Arc::new(RetryingExecutor::new(self.config.retry.tool.clone())))
            .with_reply_watch(Arc::new(watch))
            .with_events(self.events.clone());
        driver.drive(&mut run).await.map_err(AgentError::Driver)
    }
}

impl AgentBuilder {
    /// The model; it is wrapped in [`Retry`] with the configured settings.
    #[must_use]
    pub fn provider(mut self, provider: impl Provider + 'static) -> Self {
        self.provider = Some(Arc::new(provider));
        self
    }

    /// A tool.
    #[must_use]
    pub fn tool(mut self, tool: impl looprail_loop_core::Tool + 'static) -> Self {
        self.tools = self.tools.with(tool);
        self
    }

    /// The system prompt.
    #[must_use]
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// The configuration (see [`LooprailConfig`]).
    #[must_use]
    pub fn config(mut self, config: LooprailConfig) -> Self {
        self.config = config;
        self
    }

    /// Where events go.
    #[must_use]
    pub fn events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// Builds the agent.
    pub fn build(self) -> Result<Agent, AgentError> {
        self.config.validate().map_err(|e| AgentError::Engine(e.into()))?;
        let provider = self.provider.ok_or(AgentError::MissingProvider)?;
        let retried: Arc<dyn Provider> =
            Arc::new(Retry::new(SharedProvider(provider)).with_config(self.config.retry.model.clone()));
        Ok(Agent {
            provider: retried,
            tools: self.tools,
            config: self.config,
            system: self.system,
            events: self.events,
        })
    }
}

/// Lets an `Arc<dyn Provider>` be wrapped by provider layers.
struct SharedProvider(Arc<dyn Provider>);

#[async_trait::async_trait]
impl Provider for SharedProvider {
    fn model(&self) -> &str {
        self.0.model()
    }
    fn provider_name(&self) -> &str {
        self.0.provider_name()
    }
    fn supports_tool_choice(&self) -> bool {
        self.0.supports_tool_choice()
    }
    async fn complete(
        &self,
        request: &looprail_loop_core::provider::ModelRequest<'_>,
    ) -> Result<looprail_loop_core::provider::ModelResponse, looprail_loop_core::provider::ProviderError>
    {
        self.0.complete(request).await
    }
    async fn stream(
        &self,
        request: &looprail_loop_core::provider::ModelRequest<'_>,
    ) -> Result<looprail_loop_core::provider::ResponseStream, looprail_loop_core::provider::ProviderError>
    {
        self.0.stream(request).await
    }
}
