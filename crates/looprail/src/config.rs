//! The one config file shared by the library and the CLI (F40), JSON or TOML: every section
//! optional, every key defaulted, unknown keys and bad values rejected with the key's path.

use std::path::Path;

use looprail_compaction::AutoCompactionConfig;
use looprail_guardrails::GuardrailsConfig;
use looprail_guardrails::replay::ErrorPatterns;
use looprail_journal::{DelegationConfig, JournalConfig};
use looprail_loop_core::config::{ConfigError, LoopConfig, deserialize_with_path, parse_json};
use looprail_loop_core::profile::Profile;
use looprail_providers::ProviderSettings;
use looprail_retry::RetryConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// Lays `patch` over `base`: objects key by key, anything else replaced.
fn lay_over(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                match base.get_mut(&key) {
                    Some(slot) => lay_over(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, patch) => *base = patch,
    }
}

fn prefixed(section: &str, error: ConfigError) -> ConfigError {
    ConfigError::new(format!("{section}.{}", error.key), error.message)
}

impl LooprailConfig {
    /// Every default, with the loop section of `profile` (the library's default is
    /// [`Profile::Task`]; the gateway, the hooks and the audit use [`Profile::CodingAgent`]).
    pub fn for_profile(profile: Profile) -> Self {
        Self { loop_: profile.config(), ..Self::default() }
    }

    /// Parses JSON, then validates every section. The loop section starts from the `task`
    /// profile unless it names another (`"loop": {"profile": "coding-agent"}`).
    pub fn from_json_str(text: &str) -> Result<Self, ConfigError> {
        Self::from_json_str_for(text, Profile::Task)
    }

    /// Parses JSON; a loop section that names no profile starts from `default`'s.
    pub fn from_json_str_for(text: &str, default: Profile) -> Result<Self, ConfigError> {
        Self::from_value(parse_json(text)?, default)
    }

    /// Parses TOML, then validates every section (profiles as in [`Self::from_json_str`]).
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        Self::from_toml_str_for(text, Profile::Task)
    }

    /// Parses TOML; a loop section that names no profile starts from `default`'s.
    pub fn from_toml_str_for(text: &str, default: Profile) -> Result<Self, ConfigError> {
        let de = toml::Deserializer::parse(text).map_err(|e| ConfigError::new(".", e.to_string()))?;
        Self::from_value(deserialize_with_path(de)?, default)
    }

    /// Reads a `.json` or `.toml` file (by extension; anything else is tried as JSON).
    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        Self::from_path_for(path, Profile::Task)
    }

    /// Reads a file; a loop section that names no profile starts from `default`'s.
    pub fn from_path_for(path: &Path, default: Profile) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(path.display().to_string(), format!("cannot be read: {e}")))?;
        if path.extension().is_some_and(|e| e == "toml") {
            Self::from_toml_str_for(&text, default)
        } else {
            Self::from_json_str_for(&text, default)
        }
    }

    /// The document with its loop section laid over its profile's, then read and validated.
    fn from_value(mut document: Value, default: Profile) -> Result<Self, ConfigError> {
        let named = match document.get_mut("loop").and_then(Value::as_object_mut) {
            Some(section) => section.remove("profile"),
            None => None,
        };
        let profile = match named {
            None => default,
            Some(Value::String(name)) => Profile::from_name(&name).ok_or_else(|| {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                ConfigError::new(
                    "loop.profile",
                    format!("unknown profile `{name}` (one of {})", names.join(", ")),
                )
            })?,
            Some(other) => {
                return Err(ConfigError::new(
                    "loop.profile",
                    format!("expected a profile name, found {other}"),
                ));
            }
        };
        let mut base =
            serde_json::to_value(profile.config()).map_err(|e| ConfigError::new("loop", e.to_string()))?;
        if let Some(object) = document.as_object_mut() {
            if let Some(section) = object.remove("loop") {
                lay_over(&mut base, section);
            }
            object.insert("loop".to_owned(), base);
        }
        let config: Self = deserialize_with_path(document)?;
        config.validate()?;
        Ok(config)
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

    #[test]
    fn a_profile_is_the_loop_sections_base_and_given_keys_override_it() {
        let agent = Profile::CodingAgent;
        // No file, or a file without a loop section: the caller's profile.
        assert_eq!(LooprailConfig::from_toml_str_for("", agent).unwrap(), LooprailConfig::for_profile(agent));
        assert_eq!(LooprailConfig::from_toml_str("").unwrap(), LooprailConfig::default());
        // Keys given override the profile's; the rest stays the profile's.
        let tuned =
            LooprailConfig::from_toml_str_for("[loop.limits]\nmax_iterations = 200\n", agent).unwrap();
        assert_eq!(tuned.loop_.limits.max_iterations, 200);
        assert_eq!(tuned.loop_.budget, agent.config().budget);
        // A file names its own profile.
        let task = LooprailConfig::from_toml_str_for("[loop]\nprofile = \"task\"\n", agent).unwrap();
        assert_eq!(task.loop_, LoopConfig::default());
        let named = LooprailConfig::from_json_str(
            r#"{"loop": {"profile": "coding-agent", "budget": {"total": {"cost_limit": 5}}}}"#,
        )
        .unwrap();
        assert_eq!(named.loop_.limits.max_iterations, 1_000);
        assert_eq!(named.loop_.budget.total.cost_limit, Some(5.0));
        let err = LooprailConfig::from_toml_str("[loop]\nprofile = \"weekend\"\n").unwrap_err();
        assert_eq!(err.key, "loop.profile");
        let err = LooprailConfig::from_toml_str_for("[loop.budget]\nscope = \"day\"\n", agent).unwrap_err();
        assert_eq!(err.key, "loop.budget.scope");
    }
}
