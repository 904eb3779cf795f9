//! The native addon of the `looprail` npm package: [`looprail_embed::AgentGuard`] as the
//! JavaScript class `Guard`, its verdicts as plain objects. The JavaScript side (`npm/`) adds
//! the type declarations and the Vercel AI SDK adapter.
//!
//! Everything a caller passes is checked here: a config that does not parse, a saved state that
//! is not one, a call without its fields throw an `Error` with one readable line, and the guard
//! is left as it was.

use std::time::{SystemTime, UNIX_EPOCH};

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail::core::provider::Usage as NativeUsage;
use looprail_embed::{AgentGuard, Call, Reply, Verdict as NativeVerdict};
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// What the host does next.
#[napi(object)]
pub struct Verdict {
    /// `allow`, `nudge`, `deny`, `ask` or `stop`.
    pub action: String,
    /// The nudge, the denial, the question, or the final-answer instruction.
    pub message: String,
    /// Why, for `ask` and `stop`.
    pub reason: String,
}

impl From<NativeVerdict> for Verdict {
    fn from(v: NativeVerdict) -> Self {
        Self { action: v.action.name().to_owned(), message: v.message, reason: v.reason }
    }
}

/// How a guard is made: a profile (`coding-agent`, the default, or `task`) and a config (a path
/// to a looprail config file, or an object of the same sections).
#[napi(object)]
pub struct GuardOptions {
    /// `coding-agent` or `task`.
    pub profile: Option<String>,
    /// A path, or an object.
    pub config: Option<serde_json::Value>,
}

/// A tool call.
#[napi(object)]
pub struct ToolCallInput {
    /// Its id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments: JSON text or a value.
    pub arguments: serde_json::Value,
}

/// Tokens a reply spent.
#[napi(object)]
pub struct UsageInput {
    /// Prompt tokens.
    pub input_tokens: Option<i64>,
    /// Generated tokens.
    pub output_tokens: Option<i64>,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: Option<i64>,
    /// Prompt tokens written to it.
    pub cache_write_tokens: Option<i64>,
}

/// A model reply.
#[napi(object)]
pub struct ReplyInput {
    /// Its text.
    pub text: Option<String>,
    /// Its calls.
    pub calls: Option<Vec<ToolCallInput>>,
    /// The usage the provider reported.
    pub usage: Option<UsageInput>,
    /// The model that answered.
    pub model: Option<String>,
}

/// A guard event, as `looprail audit` reports it.
#[napi(object)]
pub struct GuardEvent {
    /// The run-wide index of the call it fired at.
    pub call_index: i64,
    /// `agent.loop.detected` or `agent.guardrail.intervened`.
    pub event: String,
    /// The detector or guard.
    pub detector: String,
    /// The ladder's rung.
    pub level: String,
    /// The tool.
    pub tool: String,
    /// The kind of repetition.
    pub tier: String,
    /// The earlier calls it repeats.
    pub evidence: Vec<i64>,
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::new(Status::InvalidArg, what.to_string())
}

fn now_ms(given: Option<i64>) -> i64 {
    given.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    })
}

fn load_config(options: Option<GuardOptions>) -> Result<LooprailConfig> {
    let GuardOptions { profile, config } = options.unwrap_or(GuardOptions { profile: None, config: None });
    let profile = match profile.as_deref() {
        Some(name) => Profile::from_name(name).ok_or_else(|| {
            bad(format!("unknown profile `{name}` (known: {})", Profile::ALL.map(Profile::name).join(", ")))
        })?,
        None => Profile::CodingAgent,
    };
    let loaded = match config {
        None | Some(serde_json::Value::Null) => return Ok(LooprailConfig::for_profile(profile)),
        Some(serde_json::Value::String(path)) => LooprailConfig::from_path_for(path.as_ref(), profile),
        Some(value @ serde_json::Value::Object(_)) => {
            LooprailConfig::from_json_str_for(&value.to_string(), profile)
        }
        Some(_) => return Err(bad("config is a path or an object")),
    };
    loaded.map_err(|e| bad(format!("config: {e}")))
}

fn arguments_text(value: serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text,
        other => other.to_string(),
    }
}

fn count(n: Option<i64>, what: &str) -> Result<u64> {
    u64::try_from(n.unwrap_or(0)).map_err(|_| bad(format!("usage.{what} is a count")))
}

/// One agent's guard: loop detection with its escalation ladder, budgets and time limits, the
/// degenerate-reply watch. Report each step of the agent's loop; do what the verdict says.
#[napi]
pub struct Guard {
    inner: AgentGuard,
}

#[napi]
impl Guard {
    /// A fresh guard.
    #[napi(constructor)]
    pub fn new(options: Option<GuardOptions>) -> Result<Self> {
        Ok(Self { inner: AgentGuard::new(&load_config(options)?) })
    }

    /// A guard that goes on from what `save()` returned.
    #[napi(factory)]
    pub fn restore(saved: String, options: Option<GuardOptions>) -> Result<Self> {
        let config = load_config(options)?;
        Ok(Self { inner: AgentGuard::restore(&config, &saved).map_err(bad)? })
    }

    /// The guard's state as JSON text.
    #[napi]
    pub fn save(&self) -> String {
        self.inner.save()
    }

    /// A message from the user: a new stretch with its own budgets and a fresh ladder.
    #[napi]
    pub fn user_message(&mut self, now_ms: Option<i64>) {
        self.inner.user_message(now_ms);
    }

    /// Before each model call: budgets, time limits, the iteration cap.
    #[napi]
    pub fn before_model(&mut self, now_ms: Option<i64>) -> Verdict {
        self.inner.before_model(self::now_ms(now_ms)).into()
    }

    /// A piece of the reply's text as it streams; true when the reply repeats itself.
    #[napi]
    pub fn stream_text(&mut self, delta: String) -> bool {
        self.inner.stream_text(&delta)
    }

    /// The model's reply.
    #[napi]
    pub fn model_response(&mut self, reply: ReplyInput, now_ms: Option<i64>) -> Result<Verdict> {
        let usage = match reply.usage {
            Some(u) => Some(NativeUsage {
                input_tokens: count(u.input_tokens, "inputTokens")?,
                output_tokens: count(u.output_tokens, "outputTokens")?,
                cache_read_tokens: count(u.cache_read_tokens, "cacheReadTokens")?,
                cache_write_tokens: count(u.cache_write_tokens, "cacheWriteTokens")?,
                estimated_tokens: 0,
            }),
            None => None,
        };
        let calls = reply
            .calls
            .unwrap_or_default()
            .into_iter()
            .map(|c| Call { id: c.id, name: c.name, arguments: arguments_text(c.arguments) })
            .collect();
        let reply = Reply { text: reply.text, calls, usage, model: reply.model.unwrap_or_default() };
        Ok(self.inner.model_response(&reply, self::now_ms(now_ms)).into())
    }

    /// Before a call of the last reply runs.
    #[napi]
    pub fn before_tool(&mut self, call: ToolCallInput) -> Verdict {
        let call = Call { id: call.id, name: call.name, arguments: arguments_text(call.arguments) };
        self.inner.before_tool(&call).into()
    }

    /// A call's result (for a denied call, the denial the model read).
    #[napi]
    pub fn after_tool(&mut self, id: String, output: String, failed: Option<bool>) -> Verdict {
        self.inner.after_tool(&id, &output, failed.unwrap_or(false)).into()
    }

    /// The guard events since the last call.
    #[napi]
    pub fn take_events(&mut self) -> Vec<GuardEvent> {
        let index = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.inner
            .take_events()
            .into_iter()
            .map(|e| GuardEvent {
                call_index: index(e.call_index),
                event: e.event,
                detector: e.detector,
                level: e.level,
                tool: e.tool,
                tier: e.tier,
                evidence: e.evidence.into_iter().map(index).collect(),
            })
            .collect()
    }
}
