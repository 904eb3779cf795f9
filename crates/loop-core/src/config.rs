//! The loop's configuration (F40) with the seeds' defaults. Unknown keys and out-of-range
//! values are rejected with an error naming the key.
//!
//! ```
//! use looprail_loop_core::config::LoopConfig;
//!
//! let config = LoopConfig::from_json_str(r#"{"budget": {"max_turns": 20}}"#).unwrap();
//! assert_eq!(config.budget.max_turns, Some(20));
//! assert_eq!(config.limits.max_iterations, 50); // untouched keys keep their defaults
//!
//! let err = LoopConfig::from_json_str(r#"{"budget": {"max_turn": 20}}"#).unwrap_err();
//! assert_eq!(err.key, "budget.max_turn");
//! ```

use serde::{Deserialize, Serialize};

use crate::price::PriceTable;

/// Hard caps that apply with no configuration (F2) and size limits on what the loop accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Iteration ceiling: model turns before the max-iterations handler is asked (F2, F11).
    pub max_iterations: u32,
    /// Deepest allowed child run; the top-level run is depth 0 (F2, F37).
    pub max_delegation_depth: u32,
    /// Tool output longer than this many bytes is cut, with a note of what was cut.
    pub max_tool_output_bytes: usize,
    /// Output-token cap sent with every model call, if any.
    pub max_output_tokens: Option<u32>,
    /// Seconds one tool call may take before it is given up as timed out (0 = no limit).
    pub tool_timeout_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_iterations: 50,
            max_delegation_depth: 3,
            max_tool_output_bytes: 64 * 1024,
            max_output_tokens: None,
            tool_timeout_secs: 600,
        }
    }
}

/// What the iteration cap, the budgets and the time limits count (B16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScope {
    /// The whole run: one task, one run (a library [`Run`](crate::Run)'s default).
    #[default]
    Run,
    /// The current autonomous stretch: the turns since the last real user message, and its
    /// own duration (the gateway's and the hooks' default; see [`stretch`](crate::counters)).
    Stretch,
}

/// Budgets over the whole run or conversation, whatever the scope of the others (all off by
/// default): a total cost for a conversation that lasts for days, say.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TotalBudgets {
    /// Model turns in all.
    pub max_turns: Option<u32>,
    /// Input + output tokens in all.
    pub token_budget: Option<u64>,
    /// Tool calls in all.
    pub tool_call_budget: Option<u32>,
    /// Cost in all, priced with [`LoopConfig::prices`].
    pub cost_limit: Option<f64>,
}

/// Budgets checked at every turn start (F4) and time limits (F6). `None` or 0 switches one off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    /// What the budgets, the time limits and the iteration cap count: the run, or the
    /// current autonomous stretch.
    pub scope: BudgetScope,
    /// Model turns.
    pub max_turns: Option<u32>,
    /// Cumulative input + output tokens.
    pub token_budget: Option<u64>,
    /// Tool calls requested by the model.
    pub tool_call_budget: Option<u32>,
    /// Cost, priced with [`LoopConfig::prices`].
    pub cost_limit: Option<f64>,
    /// Soft wall-clock limit in seconds: one final summary turn, then stop (0 = off).
    pub soft_time_limit_secs: u64,
    /// Hard wall-clock limit in seconds: stop at the next boundary (0 = off).
    pub hard_time_limit_secs: u64,
    /// Budgets over everything, whatever `scope` says.
    pub total: TotalBudgets,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            scope: BudgetScope::Run,
            total: TotalBudgets::default(),
            max_turns: None,
            token_budget: None,
            tool_call_budget: None,
            cost_limit: None,
            soft_time_limit_secs: 15 * 60,
            hard_time_limit_secs: 20 * 60,
        }
    }
}

/// Loop-level guardrails of S1 and S0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopGuardrails {
    /// Truncated replies continued automatically (F12); 0 turns it off.
    pub max_tokens_recoveries: u32,
    /// Token headroom for `near_budget()` (F5).
    pub reserve_tokens: u64,
    /// Cost headroom for `near_budget()`, as a fraction of the cost limit (F5).
    pub reserve_cost_fraction: f64,
    /// Nudges when the model finishes with open todo items (F14).
    pub todo_nudge_cap: u32,
    /// The tool the model calls to ask a human; declared to the model automatically.
    /// `null` switches it off.
    pub ask_human_tool: Option<String>,
}

impl Default for LoopGuardrails {
    fn default() -> Self {
        Self {
            max_tokens_recoveries: 2,
            reserve_tokens: 512,
            reserve_cost_fraction: 0.1,
            todo_nudge_cap: 3,
            ask_human_tool: Some("ask_human".to_owned()),
        }
    }
}

/// The loop's whole configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopConfig {
    /// Hard caps.
    pub limits: Limits,
    /// Budgets and time limits.
    pub budget: Budgets,
    /// Loop-level guardrails.
    pub guardrails: LoopGuardrails,
    /// Prices per model, for the cost limit.
    pub prices: PriceTable,
}

/// A configuration problem, naming the key (dotted path) it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config key `{key}`: {message}")]
pub struct ConfigError {
    /// The dotted path of the offending key, such as `budget.max_turns`.
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    /// An error about `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { key: key.into(), message: message.into() }
    }
}

/// Deserializes `T` from any serde deserializer, reporting the failing key's path.
pub fn deserialize_with_path<'de, T, D>(deserializer: D) -> Result<T, ConfigError>
where
    T: Deserialize<'de>,
    D: serde::Deserializer<'de>,
    D::Error: std::fmt::Display,
{
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner().to_string();
        // serde names an unknown field in its message but the path stops at its parent.
        let key = match unknown_field_name(&inner) {
            Some(field) if path == "." => field.to_owned(),
            Some(field) if path != field && !path.ends_with(&format!(".{field}")) => {
                format!("{path}.{field}")
            }
            _ => path,
        };
        ConfigError::new(key, inner)
    })
}

/// Parses a JSON document into `T`, naming the failing key and refusing trailing text. Each
/// config type validates the result itself.
pub fn parse_json<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value: T = deserialize_with_path(&mut de)?;
    de.end().map_err(|e| ConfigError::new(".", e.to_string()))?;
    Ok(value)
}

fn unknown_field_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

impl LoopConfig {
    /// Parses and validates a JSON document.
    pub fn from_json_str(json: &str) -> Result<Self, ConfigError> {
        let config: Self = parse_json(json)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every range; the first problem is returned, naming its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let l = &self.limits;
        if l.max_iterations == 0 {
            return Err(ConfigError::new("limits.max_iterations", "must be at least 1"));
        }
        if l.max_tool_output_bytes < 256 {
            return Err(ConfigError::new("limits.max_tool_output_bytes", "must be at least 256"));
        }
        if l.max_output_tokens == Some(0) {
            return Err(ConfigError::new("limits.max_output_tokens", "must be at least 1"));
        }
        let b = &self.budget;
        if b.max_turns == Some(0) {
            return Err(ConfigError::new("budget.max_turns", "must be at least 1 (omit it for no budget)"));
        }
        if b.tool_call_budget == Some(0) {
            return Err(ConfigError::new(
                "budget.tool_call_budget",
                "must be at least 1 (omit it for no budget; a run that must not call tools gets no tools)",
            ));
        }
        if b.token_budget == Some(0) {
            return Err(ConfigError::new(
                "budget.token_budget",
                "must be at least 1 (omit it for no budget)",
            ));
        }
        if let Some(limit) = b.cost_limit
            && !(limit.is_finite() && limit > 0.0)
        {
            return Err(ConfigError::new("budget.cost_limit", "must be a positive number"));
        }
        let t = &b.total;
        if t.max_turns == Some(0) || t.tool_call_budget == Some(0) || t.token_budget == Some(0) {
            let key = match (t.max_turns, t.tool_call_budget) {
                (Some(0), _) => "budget.total.max_turns",
                (_, Some(0)) => "budget.total.tool_call_budget",
                _ => "budget.total.token_budget",
            };
            return Err(ConfigError::new(key, "must be at least 1 (omit it for no budget)"));
        }
        if let Some(limit) = t.cost_limit
            && !(limit.is_finite() && limit > 0.0)
        {
            return Err(ConfigError::new("budget.total.cost_limit", "must be a positive number"));
        }
        if b.soft_time_limit_secs > 0
            && b.hard_time_limit_secs > 0
            && b.soft_time_limit_secs >= b.hard_time_limit_secs
        {
            return Err(ConfigError::new(
                "budget.soft_time_limit_secs",
                "must be below budget.hard_time_limit_secs",
            ));
        }
        let g = &self.guardrails;
        if !(0.0..1.0).contains(&g.reserve_cost_fraction) {
            return Err(ConfigError::new("guardrails.reserve_cost_fraction", "must be in [0, 1)"));
        }
        if g.ask_human_tool.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::new(
                "guardrails.ask_human_tool",
                "must not be empty (use null to switch it off)",
            ));
        }
        for (model, price) in &self.prices.models {
            let fields = [
                ("input_per_mtok", Some(price.input_per_mtok)),
                ("output_per_mtok", Some(price.output_per_mtok)),
                ("cache_read_per_mtok", price.cache_read_per_mtok),
                ("cache_write_per_mtok", price.cache_write_per_mtok),
            ];
            for (field, value) in fields {
                if value.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                    return Err(ConfigError::new(
                        format!("prices.{model}.{field}"),
                        "must be a non-negative number",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_seed_numbers() {
        let c = LoopConfig::default();
        assert_eq!(c.limits.max_iterations, 50);
        assert_eq!(c.limits.max_delegation_depth, 3);
        assert_eq!(c.guardrails.max_tokens_recoveries, 2);
        assert_eq!(c.guardrails.reserve_tokens, 512);
        assert!((c.guardrails.reserve_cost_fraction - 0.1).abs() < f64::EPSILON);
        assert_eq!(c.guardrails.todo_nudge_cap, 3);
        assert_eq!(c.budget.soft_time_limit_secs, 900);
        assert_eq!(c.budget.hard_time_limit_secs, 1200);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (r#"{"limits": {"max_iterations": 0}}"#, "limits.max_iterations"),
            (r#"{"guardrails": {"reserve_cost_fraction": 1.5}}"#, "guardrails.reserve_cost_fraction"),
            (r#"{"guardrails": {"reserve_tokens": -1}}"#, "guardrails.reserve_tokens"),
            (r#"{"budget": {"max_turns": "ten"}}"#, "budget.max_turns"),
            // Every budget refuses 0 alike (omit the key for no budget).
            (r#"{"budget": {"max_turns": 0}}"#, "budget.max_turns"),
            (r#"{"budget": {"tool_call_budget": 0}}"#, "budget.tool_call_budget"),
            (r#"{"budget": {"token_budget": 0}}"#, "budget.token_budget"),
            (r#"{"budgets": {}}"#, "budgets"),
            (r#"{"budget": {"scope": "week"}}"#, "budget.scope"),
            (r#"{"budget": {"total": {"cost_limit": -2}}}"#, "budget.total.cost_limit"),
            (r#"{"budget": {"total": {"tool_call_budget": 0}}}"#, "budget.total.tool_call_budget"),
            (r#"{"budget": {"total": {"turns": 3}}}"#, "budget.total.turns"),
            (
                r#"{"prices": {"gpt-4o": {"input_per_mtok": -1, "output_per_mtok": 1}}}"#,
                "prices.gpt-4o.input_per_mtok",
            ),
            (
                r#"{"prices": {"gpt-4o": {"input_per_mtok": 1, "output_per_mtok": 1, "extra": 1}}}"#,
                "prices.gpt-4o.extra",
            ),
            (
                r#"{"budget": {"soft_time_limit_secs": 60, "hard_time_limit_secs": 30}}"#,
                "budget.soft_time_limit_secs",
            ),
        ];
        for (json, key) in cases {
            let err = LoopConfig::from_json_str(json).unwrap_err();
            assert_eq!(err.key, key, "for {json}: {err}");
        }
    }

    #[test]
    fn trailing_garbage_is_rejected() {
        assert!(LoopConfig::from_json_str("{} x").is_err());
    }
}
