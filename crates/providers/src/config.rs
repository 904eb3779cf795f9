//! Client configuration: base URL, API key (from the environment by default), model, timeouts
//! and extra headers. A missing key is an error when the client is built, not at its first call.

use std::time::Duration;

use looprail_loop_core::config::ConfigError;

/// Which field carries the output-token cap on an OpenAI-style request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens` (OpenAI's current name).
    MaxCompletionTokens,
    /// `max_tokens` (what most OpenAI-compatible servers read).
    MaxTokens,
}

/// How to reach one model.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The model to call.
    pub model: String,
    /// The API's base URL, such as `https://api.openai.com/v1`.
    pub base_url: String,
    /// The API key; `None` for servers that need none (a local vLLM or Ollama).
    pub api_key: Option<String>,
    /// Time to connect.
    pub connect_timeout: Duration,
    /// Time for a whole request, body included.
    pub request_timeout: Duration,
    /// Time for a streamed answer to start (its status and headers). Whole-answer calls are
    /// bounded by `request_timeout` only: their headers come when the answer is done.
    pub first_byte_timeout: Duration,
    /// Longest silence between two chunks of a stream.
    pub idle_timeout: Duration,
    /// Extra headers sent with every request.
    pub extra_headers: Vec<(String, String)>,
    /// Output-token cap when the request sets none (Anthropic requires one).
    pub default_max_tokens: u32,
    /// The field name for the output-token cap (OpenAI-style APIs only).
    pub max_tokens_field: MaxTokensField,
}

fn key_from_env(var: &str) -> Option<String> {
    key_from(var, |v| std::env::var(v).ok())
}

/// Reads a key through `lookup` (the environment in production, a map in tests).
fn key_from(var: &str, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    lookup(var).filter(|k| !k.trim().is_empty())
}

fn missing_key(var: &str) -> ConfigError {
    ConfigError::new(var, "is not set: export it, or pass a key with `with_api_key`")
}

impl ClientConfig {
    fn base(model: &str, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            model: model.to_owned(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(90),
            extra_headers: Vec::new(),
            default_max_tokens: 4096,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
        }
    }

    /// The OpenAI API with the key from `OPENAI_API_KEY`.
    pub fn openai(model: &str) -> Result<Self, ConfigError> {
        Self::openai_with(model, |v| std::env::var(v).ok())
    }

    /// The OpenAI API with the key found by `lookup` (the environment for [`Self::openai`]).
    pub fn openai_with(model: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let key = key_from("OPENAI_API_KEY", lookup).ok_or_else(|| missing_key("OPENAI_API_KEY"))?;
        Ok(Self::base(model, "https://api.openai.com/v1", Some(key)))
    }

    /// An OpenAI-compatible server (vLLM, Ollama, OpenRouter...) at `base_url`, with the key
    /// from `OPENAI_API_KEY` when it is set and none otherwise.
    pub fn openai_compatible(model: &str, base_url: &str) -> Self {
        let mut config = Self::base(model, base_url, key_from_env("OPENAI_API_KEY"));
        config.max_tokens_field = MaxTokensField::MaxTokens;
        config
    }

    /// The Anthropic API with the key from `ANTHROPIC_API_KEY`.
    pub fn anthropic(model: &str) -> Result<Self, ConfigError> {
        Self::anthropic_with(model, |v| std::env::var(v).ok())
    }

    /// The Anthropic API with the key found by `lookup`.
    pub fn anthropic_with(model: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let key = key_from("ANTHROPIC_API_KEY", lookup).ok_or_else(|| missing_key("ANTHROPIC_API_KEY"))?;
        Ok(Self::base(model, "https://api.anthropic.com", Some(key)))
    }

    /// A config for `base_url` with an explicit key (tests, proxies, self-hosted gateways).
    pub fn custom(model: &str, base_url: &str, api_key: Option<&str>) -> Self {
        Self::base(model, base_url, api_key.map(str::to_owned))
    }

    /// Sets the key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the base URL.
    #[must_use]
    pub fn with_base_url(mut self, url: &str) -> Self {
        self.base_url = url.trim_end_matches('/').to_owned();
        self
    }

    /// Sets the three timeouts.
    #[must_use]
    pub fn with_timeouts(mut self, connect: Duration, request: Duration, idle: Duration) -> Self {
        self.connect_timeout = connect;
        self.request_timeout = request;
        self.idle_timeout = idle;
        self
    }

    /// Sets how long a streamed answer may take to start.
    #[must_use]
    pub fn with_first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.first_byte_timeout = timeout;
        self
    }

    /// Adds a header to every request.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    /// Checks the values a client cannot work without, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.model.trim().is_empty() {
            return Err(ConfigError::new("model", "must not be empty"));
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(ConfigError::new("base_url", format!("`{}` is not an http(s) URL", self.base_url)));
        }
        if self.default_max_tokens == 0 {
            return Err(ConfigError::new("default_max_tokens", "must be at least 1"));
        }
        if self.idle_timeout.is_zero()
            || self.request_timeout.is_zero()
            || self.connect_timeout.is_zero()
            || self.first_byte_timeout.is_zero()
        {
            return Err(ConfigError::new("timeouts", "must be longer than zero"));
        }
        Ok(())
    }
}
