//! [`ProviderSettings`]: the `[provider]` section of the config file — the client timeouts, the
//! model fallback chain (F23) and the cheaper summary model (F27) — validated with the key
//! named, and applied to a [`ClientConfig`].

use std::time::Duration;

use looprail_loop_core::config::ConfigError;
use serde::{Deserialize, Serialize};

use crate::config::ClientConfig;

/// How models are reached, beyond which API and model the caller names.
///
/// ```
/// use looprail_providers::{ClientConfig, ProviderSettings};
///
/// let settings = ProviderSettings { first_byte_timeout_secs: 20, ..ProviderSettings::default() };
/// settings.validate()?;
/// let config = settings.apply(ClientConfig::custom("gpt-4o", "http://127.0.0.1:8000/v1", None));
/// assert_eq!(config.first_byte_timeout.as_secs(), 20);
/// assert_eq!(config.idle_timeout.as_secs(), 90);
/// # Ok::<(), looprail_loop_core::config::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderSettings {
    /// Longest wait to open the connection (TCP and TLS).
    pub connect_timeout_secs: u64,
    /// Longest wait for a streamed answer to start (status and headers). A whole-answer call
    /// gets its headers only when the answer is done, so only `request_timeout_secs` bounds it.
    pub first_byte_timeout_secs: u64,
    /// Longest silence between two chunks of a stream.
    pub idle_timeout_secs: u64,
    /// Longest attempt, from connecting to the last byte of the answer.
    pub request_timeout_secs: u64,
    /// Models tried in order after the main one when it keeps failing (F23), on the same API
    /// and base URL. Empty: no fallback.
    pub fallback_models: Vec<String>,
    /// A cheaper model for compaction summaries (F27); `None` uses the main model.
    pub summary_model: Option<String>,
    /// Longest wait for a summary before compaction truncates deterministically instead.
    pub summary_timeout_secs: u64,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        Self {
            connect_timeout_secs: 10,
            first_byte_timeout_secs: 60,
            idle_timeout_secs: 90,
            request_timeout_secs: 600,
            fallback_models: Vec::new(),
            summary_model: None,
            summary_timeout_secs: 60,
        }
    }
}

impl ProviderSettings {
    /// Checks every value, naming the key: timeouts are at least one second, model names are
    /// not blank.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("connect_timeout_secs", self.connect_timeout_secs),
            ("first_byte_timeout_secs", self.first_byte_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("request_timeout_secs", self.request_timeout_secs),
            ("summary_timeout_secs", self.summary_timeout_secs),
        ] {
            if value == 0 {
                return Err(ConfigError::new(key, "must be at least 1 second"));
            }
        }
        if self.first_byte_timeout_secs > self.request_timeout_secs {
            return Err(ConfigError::new(
                "first_byte_timeout_secs",
                "must not exceed `request_timeout_secs`",
            ));
        }
        if let Some(index) = self.fallback_models.iter().position(|m| m.trim().is_empty()) {
            return Err(ConfigError::new(format!("fallback_models[{index}]"), "must not be empty"));
        }
        if self.summary_model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(ConfigError::new("summary_model", "must not be empty"));
        }
        Ok(())
    }

    /// `config` with these timeouts.
    #[must_use]
    pub fn apply(&self, mut config: ClientConfig) -> ClientConfig {
        config.connect_timeout = Duration::from_secs(self.connect_timeout_secs);
        config.first_byte_timeout = Duration::from_secs(self.first_byte_timeout_secs);
        config.idle_timeout = Duration::from_secs(self.idle_timeout_secs);
        config.request_timeout = Duration::from_secs(self.request_timeout_secs);
        config
    }

    /// The summary call's time limit.
    pub fn summary_timeout(&self) -> Duration {
        Duration::from_secs(self.summary_timeout_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_refused_with_the_key_named() {
        let bad = |settings: ProviderSettings| settings.validate().unwrap_err().key;
        assert_eq!(bad(ProviderSettings { idle_timeout_secs: 0, ..Default::default() }), "idle_timeout_secs");
        assert_eq!(
            bad(ProviderSettings { first_byte_timeout_secs: 700, ..Default::default() }),
            "first_byte_timeout_secs"
        );
        assert_eq!(
            bad(ProviderSettings { fallback_models: vec!["a".into(), " ".into()], ..Default::default() }),
            "fallback_models[1]"
        );
        assert_eq!(
            bad(ProviderSettings { summary_model: Some(String::new()), ..Default::default() }),
            "summary_model"
        );
        assert!(ProviderSettings::default().validate().is_ok());
    }

    #[test]
    fn the_defaults_match_the_client_defaults() {
        let base = ClientConfig::custom("m", "http://localhost", None);
        let applied = ProviderSettings::default().apply(base.clone());
        assert_eq!(applied.connect_timeout, base.connect_timeout);
        assert_eq!(applied.first_byte_timeout, base.first_byte_timeout);
        assert_eq!(applied.idle_timeout, base.idle_timeout);
        assert_eq!(applied.request_timeout, base.request_timeout);
    }
}
