//! looprail's guard inside an agent program, in process, with no server: the core of the
//! Python and Node bindings, and usable as is from Rust.
//!
//! An agent framework has seams around each model call and each tool call. At each, the host
//! reports what happened to an [`AgentGuard`] and does what the [`Verdict`] says:
//!
//! | the host calls | when | the verdict can be |
//! |---|---|---|
//! | [`AgentGuard::user_message`] | the user writes (a new stretch) | (nothing) |
//! | [`AgentGuard::before_model`] | before each model call | allow, nudge, ask, stop (a budget, a time limit) |
//! | [`AgentGuard::stream_text`] | each piece of streamed text | cut the reply (it repeats itself) |
//! | [`AgentGuard::model_response`] | the reply is in | allow, ask, stop |
//! | [`AgentGuard::before_tool`] | before each call runs | allow, deny, ask, stop |
//! | [`AgentGuard::after_tool`] | each call's result (a denied call's: the denial) | allow, nudge (with this result), ask, stop |
//!
//! The guards' events and stops come from what the host reports of the model and the tools;
//! `before_tool` enforces the ladder's directive on the host's side (the identical call comes
//! again: denied, then the human asked, then the agent stopped).
//!
//! The guards are the ones `looprail audit`, the gateway and the hooks run: fed the same run,
//! the guard reports the same events as the audit ([`AgentGuard::take_events`]). Its state
//! is saved as JSON text ([`AgentGuard::save`]) and restored in another process.
//!
//! ```
//! use looprail::LooprailConfig;
//! use looprail::core::profile::Profile;
//! use looprail_embed::{Action, AgentGuard, Call, Reply};
//!
//! let mut guard = AgentGuard::new(&LooprailConfig::for_profile(Profile::CodingAgent));
//! guard.user_message(None);
//! let mut actions = Vec::new();
//! for turn in 0..20 {
//!     let now = 1_000 * turn;
//!     let call = Call { id: format!("c{turn}"), name: "Bash".into(), arguments: r#"{"command":"make"}"#.into() };
//!     let reply = Reply { calls: vec![call.clone()], ..Reply::default() };
//!     for verdict in [guard.before_model(now), guard.model_response(&reply, now), guard.before_tool(&call)] {
//!         actions.push(verdict.action);
//!     }
//!     let verdict = guard.after_tool(&call.id, "make: *** No rule to make target", true);
//!     actions.push(verdict.action);
//!     if !verdict.goes_on() {
//!         break;
//!     }
//! }
//! // The same failing command over and over: nudged, then denied, then stopped.
//! let first = |a: Action| actions.iter().position(|x| *x == a).unwrap();
//! assert!(first(Action::Nudge) < first(Action::Deny));
//! assert!(first(Action::Deny) < first(Action::Stop));
//!
//! // The state goes on in another process.
//! let saved = guard.save();
//! let again = AgentGuard::restore(guard.config(), &saved)?;
//! assert_eq!(again.save(), saved);
//! # Ok::<(), looprail_embed::SavedError>(())
//! ```

mod guard;
mod saved;
mod verdict;

pub use guard::{AgentGuard, TAG};
/// The tokens a reply spent.
pub use looprail::core::provider::Usage;
/// The guard events the guard reports, as `looprail audit` does.
pub use looprail::guardrails::replay::ReplayEvent as GuardEvent;
pub use saved::SavedError;
pub use verdict::{Action, Call, Reply, Verdict};
