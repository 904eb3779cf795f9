//! The native addon of the `looprail` npm package: [`looprail_embed::AgentGuard`] behind
//! functions that take a guard's numeric handle, its verdicts as plain objects. The JavaScript
//! side (packaging/npm/looprail: the `Guard` class over these functions, the type declarations,
//! the Vercel AI SDK adapter) loads it from the platform's npm package.
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

/// `allow` is the common answer: it crosses as `undefined` (the wrapper has one shared object
/// for it); the others as objects.
fn answer(verdict: NativeVerdict) -> Option<Verdict> {
    (verdict.action != looprail_embed::Action::Allow).then(|| verdict.into())
}

// The guards of this thread (Node's main thread, or a worker's), by handle. The JavaScript
// class holds a handle (a number crosses into Rust for a few ns, an object reference for
// hundreds) and releases it when it is collected.
thread_local! {
    static GUARDS: std::cell::RefCell<Vec<Option<AgentGuard>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn insert(guard: AgentGuard) -> u32 {
    GUARDS.with_borrow_mut(|guards| {
        let slot = guards.iter().position(Option::is_none).unwrap_or_else(|| {
            guards.push(None);
            guards.len() - 1
        });
        guards[slot] = Some(guard);
        u32::try_from(slot).unwrap_or(u32::MAX)
    })
}

fn with<T>(handle: u32, f: impl FnOnce(&mut AgentGuard) -> T) -> Result<T> {
    GUARDS.with_borrow_mut(|guards| {
        let guard = guards.get_mut(handle as usize).and_then(Option::as_mut);
        guard.map(f).ok_or_else(|| bad("this guard was released, or belongs to another thread"))
    })
}

/// A JavaScript time (ms, a double) as whole ms; not a time (`NaN`): now.
fn ms(t: f64) -> i64 {
    if t.is_finite() { t as i64 } else { now_ms(None) }
}

/// A fresh guard's handle.
#[napi]
pub fn create(options: Option<GuardOptions>) -> Result<u32> {
    Ok(insert(AgentGuard::new(&load_config(options)?)))
}

/// The handle of a guard that goes on from what `save` returned.
#[napi]
pub fn restore(saved: String, options: Option<GuardOptions>) -> Result<u32> {
    let config = load_config(options)?;
    Ok(insert(AgentGuard::restore(&config, &saved).map_err(bad)?))
}

/// Frees a guard.
#[napi]
pub fn release(handle: u32) {
    GUARDS.with_borrow_mut(|guards| {
        if let Some(slot) = guards.get_mut(handle as usize) {
            *slot = None;
        }
    });
}

/// The guard's state as JSON text.
#[napi]
pub fn save(handle: u32) -> Result<String> {
    with(handle, |g| g.save())
}

/// A message from the user.
#[napi]
pub fn user_message(handle: u32, now_ms: f64) -> Result<()> {
    with(handle, |g| g.user_message(now_ms.is_finite().then(|| ms(now_ms))))
}

/// Before each model call.
#[napi]
pub fn before_model(handle: u32, now_ms: f64) -> Result<Option<Verdict>> {
    with(handle, |g| answer(g.before_model(ms(now_ms))))
}

/// A piece of streamed text; true when the reply repeats itself.
#[napi]
pub fn stream_text(handle: u32, delta: String) -> Result<bool> {
    with(handle, |g| g.stream_text(&delta))
}

/// A token count as JavaScript sends it (a double): a whole number from 0 up.
fn count(value: f64, what: &str) -> Result<u64> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= u64::MAX as f64 {
        Ok(value as u64)
    } else {
        Err(bad(format!("usage.{what} is a whole number of tokens, not {value}")))
    }
}

/// The model's reply: its calls flat, `[id, name, arguments, id, name, arguments, …]`
/// (arguments as JSON text), its text, the model's name, and its usage as `[input, output,
/// cacheRead, cacheWrite]` tokens. Strings and an array of them cross into Rust for far less
/// than one JSON text the wrapper would have to write and this side to parse.
#[napi]
pub fn model_response(
    handle: u32,
    now_ms: f64,
    calls: Vec<String>,
    text: Option<String>,
    model: Option<String>,
    usage: Option<Vec<f64>>,
) -> Result<Option<Verdict>> {
    if !calls.len().is_multiple_of(3) {
        return Err(bad("a reply's calls cross as [id, name, arguments] triples"));
    }
    let mut fields = calls.into_iter();
    let mut calls = Vec::with_capacity(fields.len() / 3);
    while let (Some(id), Some(name), Some(arguments)) = (fields.next(), fields.next(), fields.next()) {
        calls.push(Call { id, name, arguments });
    }
    let usage = match usage.as_deref() {
        None => None,
        Some(&[input, output, read, write]) => Some(NativeUsage {
            input_tokens: count(input, "inputTokens")?,
            output_tokens: count(output, "outputTokens")?,
            cache_read_tokens: count(read, "cacheReadTokens")?,
            cache_write_tokens: count(write, "cacheWriteTokens")?,
            estimated_tokens: 0,
        }),
        Some(_) => return Err(bad("usage crosses as [input, output, cacheRead, cacheWrite]")),
    };
    let reply = Reply { text, calls, usage, model: model.unwrap_or_default() };
    with(handle, |g| answer(g.model_response(&reply, ms(now_ms))))
}

/// Before the `index`-th call of the last reply runs.
#[napi]
pub fn before_tool_at(handle: u32, index: u32) -> Result<Option<Verdict>> {
    with(handle, |g| match g.last_calls().get(index as usize).cloned() {
        Some(call) => Ok(answer(g.before_tool(&call))),
        None => Err(bad("no such call in the last reply")),
    })?
}

/// Before a call runs (`arguments` as JSON text).
#[napi]
pub fn before_tool(handle: u32, id: String, name: String, arguments: String) -> Result<Option<Verdict>> {
    with(handle, |g| answer(g.before_tool(&Call { id, name, arguments })))
}

/// The result of the `index`-th call of the last reply.
#[napi]
pub fn after_tool_at(handle: u32, index: u32, output: String, failed: bool) -> Result<Option<Verdict>> {
    with(handle, |g| match g.last_calls().get(index as usize).map(|c| c.id.clone()) {
        Some(id) => Ok(answer(g.after_tool(&id, &output, failed))),
        None => Err(bad("no such call in the last reply")),
    })?
}

/// A call's result.
#[napi]
pub fn after_tool(handle: u32, id: String, output: String, failed: bool) -> Result<Option<Verdict>> {
    with(handle, |g| answer(g.after_tool(&id, &output, failed)))
}

/// The guard events since the last call.
#[napi]
pub fn take_events(handle: u32) -> Result<Vec<GuardEvent>> {
    let index = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    with(handle, |g| {
        g.take_events()
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
    })
}
