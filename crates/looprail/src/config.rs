//! The one config file shared by the library and the CLI (F40), JSON or TOML: every section
//! optional, every key defaulted, unknown keys and bad values rejected with the key's path.

use std::path::Path;

use looprail_compaction::AutoCompactionConfig;
use looprail_guardrails::GuardrailsConfig;
use looprail_guardrails::replay::ErrorPatterns;
use looprail_journal::{DelegationConfig, JournalConfig};
use looprail_loop_core::config::{ConfigError, LoopConfig, deserialize_with_path, parse_json};
use looprail_providers::ProviderSettings;
use looprail_retry::RetryConfig;
use serde::{Deserialize, Serialize};

/// Settings of `looprail audit`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// How logged tool results are classified as errors (logs carry no flag).
    pub error_patterns: ErrorPatterns,
}

/// Everything configurable, by section.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LooprailConfig {
    /// The loop: limits, budgets, loop guardrails, prices.
    #[serde(rename = "loop")]
    pub loop_: LoopConfig,
    /// Loop detection and the escalation ladder.
    pub guardrails: GuardrailsConfig,
    /// Auto-compaction and the recovery ladder.
    pub compaction: AutoCompactionConfig,
    /// Model-call and tool retries.
    pub retry: RetryConfig,
    /// Client timeouts, the model fallback chain and the summary model.
    pub provider: ProviderSettings,
    /// Durable runs: heartbeats, staleness, the cancel timeout, the reconcile interval.
    pub journal: JournalConfig,
    /// The `delegate` tool (off by default) and the budget share of a child run.
    pub delegation: DelegationConfig,
    /// The audit command.
    pub audit: AuditConfig,
    /// The gateway command.
    pub gateway: crate::GatewaySettings,
}

fn prefixed(section: &str, error: ConfigError) -> ConfigError {
    ConfigError::new(format!("{section}.{}", error.key), error.message)
}

impl LooprailConfig {
    /// Parses JSON, then validates every section.
    pub fn from_json_str(text: &str) -> Result<Self, ConfigError> {
        let config: Self = parse_json(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Parses TOML, then validates every section.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        let de = toml::Deserializer::parse(text).map_err(|e| ConfigError::new(".", e.to_string()))?;
        let config: Self = deserialize_with_path(de)?;
        config.validate()?;
        Ok(config)
    }

    /// Reads a `.json` or `.toml` file (by extension; anything else is tried as JSON).
    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(path.display().to_string(), format!("cannot be read: {e}")))?;
        if path.extension().is_some_and(|e| e == "toml") {
            Self::from_toml_str(&text)
        } else {
            Self::from_json_str(&text)
        }
    }

    /// Validates every section; the key names its section (`guardrails.window`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.loop_.validate().map_err(|e| prefixed("loop", e))?;
        self.guardrails.validate().map_err(|e| prefixed("guardrails", e))?;
        self.compaction.validate().map_err(|e| prefixed("compaction", e))?;
        self.retry.validate().map_err(|e| prefixed("retry", e))?;
        self.provider.validate().map_err(|e| prefixed("provider", e))?;
        self.journal.validate().map_err(|e| prefixed("journal", e))?;
        self.delegation.validate().map_err(|e| prefixed("delegation", e))?;
        self.gateway.validate().map_err(|e| prefixed("gateway", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_toml_read_the_same_config_and_errors_name_the_key() {
        let json = r#"{"loop": {"budget": {"max_turns": 12}}, "guardrails": {"escalation_gap": 3}, "compaction": {"context_window": 200000}}"#;
        let toml = "[loop.budget]\nmax_turns = 12\n[guardrails]\nescalation_gap = 3\n[compaction]\ncontext_window = 200000\n";
        let a = LooprailConfig::from_json_str(json).unwrap();
        let b = LooprailConfig::from_toml_str(toml).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.loop_.budget.max_turns, Some(12));
        assert_eq!(
            LooprailConfig::from_json_str(r#"{"guardrails": {"window": 1}}"#).unwrap_err().key,
            "guardrails.window"
        );
        assert_eq!(
            LooprailConfig::from_toml_str("[retry.tool]\nmax_attempts = 0\n").unwrap_err().key,
            "retry.tool.max_attempts"
        );
        assert_eq!(
            LooprailConfig::from_toml_str("[loop.limits]\nmax_iteration = 5\n").unwrap_err().key,
            "loop.limits.max_iteration"
        );
        assert_eq!(
            LooprailConfig::from_json_str(r#"{"compaction": {"threshold": 2}}"#).unwrap_err().key,
            "compaction.threshold"
        );
        assert_eq!(
            LooprailConfig::from_toml_str("[provider]\nidle_timeout_secs = 0\n").unwrap_err().key,
            "provider.idle_timeout_secs"
        );
        let models = LooprailConfig::from_toml_str(
            "[provider]\nfallback_models = [\"b\", \"c\"]\nsummary_model = \"small\"\n",
        )
        .unwrap();
        assert_eq!(models.provider.fallback_models, ["b", "c"]);
        assert_eq!(models.provider.summary_model.as_deref(), Some("small"));
        assert_eq!(
            LooprailConfig::from_toml_str("[journal]\nheartbeat_secs = 30\n").unwrap_err().key,
            "journal.stale_after_secs"
        );
        let journal = LooprailConfig::from_toml_str("[journal]\ncancel_timeout_secs = 60\n").unwrap();
        assert_eq!(journal.journal.cancel_timeout_secs, 60);
    }
}
