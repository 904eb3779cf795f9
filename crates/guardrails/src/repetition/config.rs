//! The detector's settings (`guardrails.degenerate_reply`).

use serde::{Deserialize, Serialize};

/// How degenerate replies are found (part of [`GuardrailsConfig`](crate::GuardrailsConfig)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RepetitionConfig {
    /// Watch every reply (on by default).
    pub enabled: bool,
    /// The chunk a repetition is recognised by, in bytes (16 to 64): the minimum repeated
    /// text is `repeat_count` chunks.
    pub chunk_bytes: u32,
    /// Copies of the repeated block in a row that make a reply degenerate.
    pub repeat_count: u32,
    /// The longest repeated block looked for, in bytes (the longest distance between two
    /// copies).
    pub max_period: u32,
}

impl Default for RepetitionConfig {
    fn default() -> Self {
        Self { enabled: true, chunk_bytes: 50, repeat_count: 10, max_period: 4096 }
    }
}

impl RepetitionConfig {
    /// Checks the ranges; the key named is relative to the section.
    pub fn validate(&self) -> Result<(), looprail_loop_core::config::ConfigError> {
        use looprail_loop_core::config::ConfigError;
        if !(16..=64).contains(&self.chunk_bytes) {
            return Err(ConfigError::new("chunk_bytes", "must be between 16 and 64"));
        }
        if !(3..=1000).contains(&self.repeat_count) {
            return Err(ConfigError::new("repeat_count", "must be between 3 and 1000"));
        }
        if !(64..=65_536).contains(&self.max_period) {
            return Err(ConfigError::new("max_period", "must be between 64 and 65536"));
        }
        Ok(())
    }
}
