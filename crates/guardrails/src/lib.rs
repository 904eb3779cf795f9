//! Loop detection and the escalation ladder for looprail agent loops.
//!
//! Every detector is a [`Guard`] on the loop-core seam or a
//! [`Detector`] feeding one, usable alone:
//!
//! | behaviour | type |
//! |---|---|
//! | repetition without novelty (the default detector) | [`NoveltyStreak`] |
//! | consecutive identical steps stop the run | [`ConsecutiveSteps`] |
//! | identical and pattern thrash in a window | [`ThrashWindow`] |
//! | nudge → directive → forced `ask_human` | [`EscalationLadder`], driven by [`LoopGuard`] |
//! | the ladder where a host can only answer calls: deny the repeat → ask → stop | [`host_ladder`] |
//! | per-executor repeat counter, abort or hint | [`RepeatCounter`] |
//! | consecutive errors → reflection | [`ErrorStreak`] |
//! | canonical arguments, masked observations | [`signature`] |
//! | polling tools exempt | [`GuardrailsConfig::polling_tools`] |
//! | alternating cycles, same action + same observation | [`CycleDetector`], [`SameObservation`] |
//! | offline replay of recorded runs | [`replay`] |
//! | a reply repeating itself, cut while it streams | [`repetition`], [`DegenerateReplies`] |
//! | the sources' literal rules and peers' rules (gemini-cli, Roo-Code, OpenHands) as named presets | [`Preset`], [`StuckPatterns`] |
//! | property tests of your own settings (feature `proptest`) | `kit` |
//!
//! A loop is repetition without novelty: calls, and observations, that bring nothing new.
//! Re-running a test after a different edit, or polling a job whose output grows with new lines,
//! is progress and never escalates; the same edit sent again while the file grows by the same
//! block is not (its output changes, by the same change every time). [`default_stack`] builds
//! the stack a [`GuardrailsConfig`] describes; the default is the [`LoopGuard`] running the
//! [`NoveltyStreak`] into the ladder (with a late backstop) and an [`ErrorStreak`] that reflects
//! on repeated errors. Judged on real SWE-agent (two models), OpenHands and tau-bench runs at
//! once, it hands every stuck run to a human within 8 calls of its loop's start and stops no
//! run the benchmark resolved on OpenHands or any run tau-bench's agent finished (figures in
//! `docs/guardrails.md`). All state is serde data saved with the run.
//!
//! ```
//! use std::sync::Arc;
//! use looprail_guardrails::{default_stack, GuardrailsConfig};
//! use looprail_loop_core::prelude::*;
//! use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
//!
//! // A model that keeps running the same failing command.
//! let mut provider = ScriptedProvider::new("scripted");
//! for _ in 0..20 {
//!     provider = provider.call_tool("shell", r#"{"cmd": "make test"}"#);
//! }
//! let tools = ToolSet::new().with(RecordingTool::new("shell").output("Error: 1 test failed"));
//! let mut builder = Run::builder(LoopConfig::default()).user("fix the build").tools(tools.definitions());
//! for guard in default_stack(&GuardrailsConfig::default()) {
//!     builder = builder.boxed_guard(guard);
//! }
//! let mut run = builder.build()?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let outcome = runtime.block_on(Driver::new(Arc::new(provider), tools).drive(&mut run))?;
//!
//! // Nudge at the 3rd identical call, directive at the 5th, ask_human at the 7th: the 8th
//! // model call is forced to call `ask_human`, and the run waits for the human.
//! assert_eq!(outcome.state, RunState::WaitingOnHuman);
//! assert_eq!(outcome.tool_calls, 8);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use looprail_loop_core::Guard;

mod config;
mod consecutive_steps;
mod degenerate;
mod detection;
pub mod detectors;
mod error_patterns;
mod error_streak;
pub mod host_ladder;
#[cfg(feature = "proptest")]
pub mod kit;
mod ladder;
mod loop_guard;
mod repeat_counter;
pub mod repetition;
pub mod replay;
pub mod session;
pub mod signature;
mod stuck_patterns;
mod waiting;

pub use config::{DetectorKind, GuardrailsConfig, Preset, RepeatAction, RepeatCounterConfig};
pub use consecutive_steps::ConsecutiveSteps;
pub use degenerate::{DegenerateReplies, DegenerateWatch};
pub use detection::{Detection, Detector, Observed, TIER_IDENTICAL_CALL};
pub use detectors::{CycleDetector, NoveltyStreak, SameObservation, ThrashWindow};
pub use error_streak::ErrorStreak;
pub use ladder::{EscalationLadder, Level};
pub use loop_guard::{DEGENERATE_REPLY, LOOP_GUARD, LoopGuard, RECOVERY};
pub use repeat_counter::{FLAG_LOOP_DETECTED, RepeatCounter};
pub use stuck_patterns::{STUCK_PATTERNS, StuckPatterns};
pub use waiting::is_waiting_call;

/// The stack `config` describes: [`ConsecutiveSteps`] (when `consecutive_steps > 0`), the
/// [`RepeatCounter`] (when configured), [`StuckPatterns`] (when `stuck_patterns`), the
/// [`LoopGuard`] (when it has a detector or a
/// backstop) and the [`ErrorStreak`] (when `error_streak > 0`). Values out of range are left to
/// [`GuardrailsConfig::validate`]; a guard whose setting it would refuse is left out.
pub fn default_stack(config: &GuardrailsConfig) -> Vec<Box<dyn Guard>> {
    let mut guards: Vec<Box<dyn Guard>> = Vec::new();
    if config.consecutive_steps > 0
        && let Ok(guard) = ConsecutiveSteps::new(config.consecutive_steps)
    {
        guards.push(Box::new(guard));
    }
    if let Some(repeat) = &config.repeat_counter {
        guards.push(Box::new(RepeatCounter::new(repeat.clone(), config.polling_tools.clone())));
    }
    if config.stuck_patterns {
        guards.push(Box::new(StuckPatterns::default()));
    }
    if !config.detectors.is_empty() || config.consecutive_stop > 0 {
        guards.push(Box::new(LoopGuard::new(config)));
    }
    let streak = if config.error_streak_repeats_only {
        ErrorStreak::repeats_only(config.error_streak)
    } else {
        ErrorStreak::new(config.error_streak)
    };
    if let Ok(guard) = streak {
        guards.push(Box::new(guard));
    }
    guards
}

/// The whole stack a conversation carried across processes runs on (the gateway's
/// conversations, the hooks' sessions): the loop's own guards for `config`
/// ([`looprail_loop_core::guards::defaults`]) and the [`default_stack`], each guard picking up
/// the state it saved ([`Guard::save_state`], kept by [`Guard::name`] in `saved`). A guard whose
/// state no longer loads whole (a setting changed since it was saved, a damaged record) starts
/// afresh, and [`RestoredStack::discarded`] says so: one
/// [`Event::GuardStateDiscarded`](looprail_loop_core::event::Event::GuardStateDiscarded) each.
///
/// ```
/// use std::collections::BTreeMap;
/// use looprail_guardrails::{GuardrailsConfig, restored_stack, saved_states};
///
/// let fresh = restored_stack(&Default::default(), &GuardrailsConfig::default(), BTreeMap::new());
/// let mut saved = saved_states(&fresh.guards);
/// saved.insert("loop_guard".into(), serde_json::json!({"ladder": "damaged"}));
/// let again = restored_stack(&Default::default(), &GuardrailsConfig::default(), saved);
/// assert_eq!(again.guards.len(), fresh.guards.len());
/// assert_eq!(again.discarded.len(), 1, "the loop guard starts afresh, and says so");
/// ```
pub fn restored_stack(
    config: &looprail_loop_core::config::LoopConfig,
    guardrails: &GuardrailsConfig,
    mut saved: std::collections::BTreeMap<String, serde_json::Value>,
) -> RestoredStack {
    let mut guards = looprail_loop_core::guards::defaults(config);
    guards.extend(default_stack(guardrails));
    let mut discarded = Vec::new();
    for guard in &mut guards {
        if let Some(state) = saved.remove(guard.name())
            && let Err(error) = guard.load_state(state)
        {
            discarded.push(looprail_loop_core::event::Event::GuardStateDiscarded {
                guard: error.guard,
                reason: error.message,
            });
        }
    }
    RestoredStack { guards, discarded }
}

/// What [`restored_stack`] built.
pub struct RestoredStack {
    /// The guards, in the order they run.
    pub guards: Vec<Box<dyn Guard>>,
    /// One event per guard whose saved state was discarded.
    pub discarded: Vec<looprail_loop_core::event::Event>,
}

impl RestoredStack {
    /// The guards, each discarded state first traced as its event
    /// ([`Event::trace`](looprail_loop_core::event::Event::trace)).
    pub fn traced(self) -> Vec<Box<dyn Guard>> {
        self.discarded.iter().for_each(looprail_loop_core::event::Event::trace);
        self.guards
    }
}

/// The states of a live stack, by [`Guard::name`], as [`restored_stack`] takes them back.
pub fn saved_states(stack: &[Box<dyn Guard>]) -> std::collections::BTreeMap<String, serde_json::Value> {
    stack.iter().map(|g| (g.name().to_owned(), g.save_state())).collect()
}
