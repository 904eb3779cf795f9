//! Configuration of the detectors and the ladder, with the defaults tuned on recorded runs
//! (see `docs/guardrails.md` for the figures). Unknown keys and out-of-range values are
//! rejected with an error naming the key.

use serde::{Deserialize, Serialize};

use looprail_loop_core::config::{ConfigError, parse_json};

use crate::ladder::Level;

/// What the repeat counter (F18) does past its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepeatAction {
    /// Stop the run with a loop error carrying tool, arguments and count.
    Abort,
    /// Do not run the tool; answer with a synthetic result flagged `loop-detected`.
    Hint,
}

/// The repeat counter's settings (F18, S3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RepeatCounterConfig {
    /// Calls of one (tool, arguments) allowed; the next one triggers the action.
    pub max_repeats: u32,
    /// What happens then.
    pub action: RepeatAction,
    /// Per-tool limits that replace `max_repeats` (B2), e.g. for status checks.
    pub per_tool: std::collections::BTreeMap<String, u32>,
    /// Distinct (tool, arguments) kept; past this, calls seen once are forgotten first.
    pub max_entries: usize,
}

impl Default for RepeatCounterConfig {
    fn default() -> Self {
        Self { max_repeats: 3, action: RepeatAction::Hint, per_tool: Default::default(), max_entries: 4096 }
    }
}

/// Settings of the default loop-detection stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardrailsConfig {
    /// Calls in the thrash window (F16).
    pub window: u32,
    /// Identical thrash: the same (tool, arguments) this many times in the window (F16).
    pub identical_threshold: u32,
    /// Pattern thrash: the same tool this many times in the window with differing arguments.
    pub pattern_threshold: u32,
    /// Highest ladder level pattern thrash alone can reach. Sequential edits and lookups look
    /// like pattern thrash, so by default it only nudges.
    pub pattern_max_level: Level,
    /// Alternating cycles (B3): a block of 2..=`cycle_max_period` calls repeated this often.
    pub cycle_repetitions: u32,
    /// Longest cycle looked for.
    pub cycle_max_period: u32,
    /// Same action, same observation (B3, B4): this many identical pairs in the window below.
    pub same_observation_threshold: u32,
    /// Calls looked back on for same-observation pairs.
    pub same_observation_window: u32,
    /// Calls between two escalations: a detection sooner than this does not climb again.
    pub escalation_gap: u32,
    /// Calls without any detection after which the ladder steps one level down.
    pub deescalate_after: u32,
    /// Consecutive identical steps that stop the run outright: a backstop for models that
    /// ignore the ladder (0 switches it off).
    pub consecutive_stop: u32,
    /// Consecutive tool errors that inject a reflection message (F19, 0 = off).
    pub error_streak: u32,
    /// The per-executor repeat counter (F18); off by default (see the tuning guide).
    pub repeat_counter: Option<RepeatCounterConfig>,
    /// Tools whose repeated calls are expected (status polls): never counted by detectors (B2).
    pub polling_tools: Vec<String>,
    /// A tool forced at the directive level, if any (the ask_human level always forces
    /// `ask_human`).
    pub directive_tool: Option<String>,
    /// A new user message resets windows, streaks and the ladder (the repeat counter lives as
    /// long as the run).
    pub reset_on_user_turn: bool,
}

impl Default for GuardrailsConfig {
    fn default() -> Self {
        Self {
            window: 6,
            identical_threshold: 3,
            pattern_threshold: 4,
            pattern_max_level: Level::Nudge,
            cycle_repetitions: 3,
            cycle_max_period: 5,
            same_observation_threshold: 4,
            same_observation_window: 20,
            escalation_gap: 2,
            deescalate_after: 8,
            consecutive_stop: 12,
            error_streak: 3,
            repeat_counter: None,
            polling_tools: Vec::new(),
            directive_tool: None,
            reset_on_user_turn: true,
        }
    }
}

impl GuardrailsConfig {
    /// Parses and validates a JSON document.
    pub fn from_json_str(json: &str) -> Result<Self, ConfigError> {
        let config: Self = parse_json(json)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every range; the first problem names its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let check = |ok: bool, key: &str, message: &str| {
            if ok { Ok(()) } else { Err(ConfigError::new(key, message)) }
        };
        check((2..=64).contains(&self.window), "window", "must be between 2 and 64")?;
        check(
            (2..=self.window).contains(&self.identical_threshold),
            "identical_threshold",
            "must be between 2 and `window`",
        )?;
        check(
            (2..=self.window).contains(&self.pattern_threshold),
            "pattern_threshold",
            "must be between 2 and `window`",
        )?;
        check(self.cycle_repetitions >= 2, "cycle_repetitions", "must be at least 2")?;
        check((2..=8).contains(&self.cycle_max_period), "cycle_max_period", "must be between 2 and 8")?;
        check(self.same_observation_threshold >= 2, "same_observation_threshold", "must be at least 2")?;
        check(
            (self.same_observation_threshold..=256).contains(&self.same_observation_window),
            "same_observation_window",
            "must be between `same_observation_threshold` and 256",
        )?;
        check(self.escalation_gap >= 1, "escalation_gap", "must be at least 1")?;
        check(self.deescalate_after >= 1, "deescalate_after", "must be at least 1")?;
        check(self.consecutive_stop != 1, "consecutive_stop", "must be 0 (off) or at least 2")?;
        if let Some(repeat) = &self.repeat_counter {
            check(repeat.max_repeats >= 1, "repeat_counter.max_repeats", "must be at least 1")?;
            check(repeat.max_entries >= 16, "repeat_counter.max_entries", "must be at least 16")?;
            for (tool, limit) in &repeat.per_tool {
                check(*limit >= 1, &format!("repeat_counter.per_tool.{tool}"), "must be at least 1")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (r#"{"window": 1}"#, "window"),
            (r#"{"identical_threshold": 9}"#, "identical_threshold"),
            (r#"{"pattern_max_level": "panic"}"#, "pattern_max_level"),
            (r#"{"repeat_counter": {"max_repeats": 0}}"#, "repeat_counter.max_repeats"),
            (r#"{"repeat_counter": {"action": "explode"}}"#, "repeat_counter.action"),
            (r#"{"repeat_counter": {"per_tool": {"poll": 0}}}"#, "repeat_counter.per_tool.poll"),
            (r#"{"windw": 6}"#, "windw"),
        ];
        for (json, key) in cases {
            let err = GuardrailsConfig::from_json_str(json).unwrap_err();
            assert_eq!(err.key, key, "{json}: {err}");
        }
        assert!(GuardrailsConfig::from_json_str("{}").is_ok());
    }
}
