//! Retry settings with documented defaults, validated with the key named.

use std::time::Duration;

use looprail_loop_core::config::{ConfigError, parse_json};
use serde::{Deserialize, Serialize};

/// Model-call retries (F21).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelRetryConfig {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff step, before jitter.
    pub initial_delay_ms: u64,
    /// Growth per step.
    pub factor: f32,
    /// Cap on one backoff step.
    pub max_delay_ms: u64,
    /// Cap on the time spent retrying one call; a retry whose wait would cross it is not made.
    pub max_elapsed_ms: u64,
    /// The longest `retry-after` honoured; a provider asking for more is not waited for.
    pub max_retry_after_ms: u64,
}

impl Default for ModelRetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_delay_ms: 1_000,
            factor: 2.0,
            max_delay_ms: 30_000,
            max_elapsed_ms: 120_000,
            max_retry_after_ms: 60_000,
        }
    }
}

/// Tool retries (F22, S2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolRetryConfig {
    /// Waits before the 2nd, 3rd, ... attempt; the last one repeats if attempts outnumber it.
    pub delays_ms: Vec<u64>,
    /// Attempts in all, the first included.
    pub max_attempts: u32,
}

impl Default for ToolRetryConfig {
    fn default() -> Self {
        Self { delays_ms: vec![500, 2_000, 8_000], max_attempts: 3 }
    }
}

/// Both.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Model calls.
    pub model: ModelRetryConfig,
    /// Tool calls.
    pub tool: ToolRetryConfig,
}

impl RetryConfig {
    /// Parses and validates a JSON document.
    pub fn from_json_str(json: &str) -> Result<Self, ConfigError> {
        let config: Self = parse_json(json)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every range, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let m = &self.model;
        if m.max_retries > 20 {
            return Err(ConfigError::new("model.max_retries", "must be at most 20"));
        }
        if !(m.factor.is_finite() && m.factor >= 1.0) {
            return Err(ConfigError::new("model.factor", "must be at least 1.0"));
        }
        if m.initial_delay_ms == 0 || m.initial_delay_ms > m.max_delay_ms {
            return Err(ConfigError::new(
                "model.initial_delay_ms",
                "must be between 1 and `model.max_delay_ms`",
            ));
        }
        let t = &self.tool;
        if t.max_attempts == 0 {
            return Err(ConfigError::new("tool.max_attempts", "must be at least 1"));
        }
        if t.max_attempts > 1 && t.delays_ms.is_empty() {
            return Err(ConfigError::new("tool.delays_ms", "needs at least one delay when retries are on"));
        }
        Ok(())
    }
}

impl ModelRetryConfig {
    /// The exponential steps before jitter: `initial × factorⁿ`, capped at `max_delay_ms`,
    /// `max_retries` of them.
    pub fn steps(&self) -> Vec<Duration> {
        use backon::BackoffBuilder;
        backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.initial_delay_ms))
            .with_max_delay(Duration::from_millis(self.max_delay_ms))
            .with_factor(self.factor)
            .with_max_times(self.max_retries as usize)
            .build()
            .collect()
    }
}

impl ToolRetryConfig {
    /// The wait before attempt `attempt` (2-based: the first retry is attempt 2).
    pub fn delay_before(&self, attempt: u32) -> Duration {
        let index = (attempt.saturating_sub(2) as usize).min(self.delays_ms.len().saturating_sub(1));
        Duration::from_millis(self.delays_ms.get(index).copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_grow_by_the_factor_up_to_the_cap() {
        let c = ModelRetryConfig {
            max_retries: 6,
            initial_delay_ms: 1_000,
            max_delay_ms: 10_000,
            ..Default::default()
        };
        let secs: Vec<u64> = c.steps().iter().map(|d| d.as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 10, 10]);
    }

    #[test]
    fn the_tool_schedule_is_half_a_second_then_two_then_eight() {
        let t = ToolRetryConfig::default();
        assert_eq!(t.delay_before(2), Duration::from_millis(500));
        assert_eq!(t.delay_before(3), Duration::from_secs(2));
        assert_eq!(t.delay_before(4), Duration::from_secs(8));
        assert_eq!(t.delay_before(9), Duration::from_secs(8));
    }

    #[test]
    fn errors_name_the_key() {
        for (json, key) in [
            (r#"{"model": {"factor": 0.5}}"#, "model.factor"),
            (r#"{"tool": {"max_attempts": 0}}"#, "tool.max_attempts"),
            (r#"{"tool": {"delays": [1]}}"#, "tool.delays"),
            (r#"{"model": {"initial_delay_ms": 0}}"#, "model.initial_delay_ms"),
        ] {
            assert_eq!(RetryConfig::from_json_str(json).unwrap_err().key, key, "{json}");
        }
    }
}
