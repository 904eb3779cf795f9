//! A property-testing kit for your own guardrail settings (feature `proptest`): strategies
//! for realistic tool-call histories ([`histories`]) and invariant checks ([`GuardKit`]) you
//! run with your config or your own guard stack, in your own test suite.
//!
//! A failed check is a [`Violation`] that prints the (shrunk) history and every decision the
//! stack took on it; it converts into proptest's `TestCaseError`, so `?` works inside
//! `proptest!`.
//!
//! ```
//! use looprail_guardrails::GuardrailsConfig;
//! use looprail_guardrails::kit::{GuardKit, histories};
//! use proptest::prelude::*;
//! use proptest::test_runner::{Config, TestRunner};
//!
//! // Your settings: a ladder that moves faster than the default one.
//! let mine = GuardrailsConfig { escalation_gap: 1, ..GuardrailsConfig::default() };
//! let kit = GuardKit::for_config(&mine);
//! let mut runner = TestRunner::new(Config { cases: 16, ..Config::default() });
//! runner
//!     .run(&histories::edit_test_cycles(&histories::Shape::default(), 1..8), |history| {
//!         kit.never_stops(&history)?;
//!         Ok(())
//!     })
//!     .unwrap();
//! runner.run(&histories::identical_loop(&histories::Shape::default(), 12..20), |history| {
//!     kit.hands_to_human_within(&history, 12)?;
//!     Ok(())
//! })
//! .unwrap();
//! ```

mod checks;
pub mod histories;
mod history;
mod trace;

pub use checks::{GuardKit, Violation};
pub use history::{History, Step};
pub use trace::{Trace, TraceStep};
