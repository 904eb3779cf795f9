//! The Anthropic Messages client.

mod event;
mod wire;

pub use wire::{API_VERSION, EventParser, parse_response, request_body, stop_reason, usage};

use async_trait::async_trait;
use looprail_loop_core::config::ConfigError;
use looprail_loop_core::provider::{ModelRequest, ModelResponse, Provider, ProviderError, ResponseStream};

use crate::config::ClientConfig;
use crate::http;
use crate::sse;

/// A client for `POST {base_url}/v1/messages`.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    config: ClientConfig,
    http: reqwest::Client,
    headers: Vec<(String, String)>,
}

impl AnthropicClient {
    /// A client for this config; an invalid config is an error naming the key.
    pub fn new(config: ClientConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let http = http::client(&config).map_err(|e| ConfigError::new("http", e.message))?;
        let mut headers = vec![("anthropic-version".to_owned(), API_VERSION.to_owned())];
        headers.extend(config.extra_headers.clone());
        if let Some(key) = &config.api_key {
            headers.push(("x-api-key".into(), key.clone()));
        }
        Ok(Self { config, http, headers })
    }

    /// The body this client sends for `request`.
    pub fn body(&self, request: &ModelRequest<'_>, stream: bool) -> serde_json::Value {
        request_body(&self.config.model, request, self.config.default_max_tokens, stream)
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.config.base_url)
    }
}

#[async_trait]
impl Provider for AnthropicClient {
    fn model(&self) -> &str {
        &self.config.model
    }

    fn provider_name(&self) -> &str {
        "anthropic"
    }

    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let response =
            http::post(&self.http, &self.url(), &self.headers, &self.body(request, false), None).await?;
        let body = http::json_body(response).await?;
        parse_response(&body, &self.config.model)
    }

    async fn stream(&self, request: &ModelRequest<'_>) -> Result<ResponseStream, ProviderError> {
        let response = http::post(
            &self.http,
            &self.url(),
            &self.headers,
            &self.body(request, true),
            Some(self.config.first_byte_timeout),
        )
        .await?;
        let response = http::event_stream(response).await?;
        Ok(sse::drive(response, EventParser::new(&self.config.model), self.config.idle_timeout))
    }
}
