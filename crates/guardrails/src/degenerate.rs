//! The degenerate-reply watch (B14): the [`RepetitionDetector`] on the loop's
//! [`watch`](looprail_loop_core::watch) seam, for the text of a reply and, separately, the
//! arguments of each of its calls.
//!
//! ```
//! use std::sync::Arc;
//! use looprail_guardrails::{DegenerateReplies, GuardrailsConfig};
//! use looprail_loop_core::prelude::*;
//! use looprail_loop_core::testkit::ScriptedProvider;
//!
//! // A model that chants, then (told what it repeated) answers.
//! let chant = format!("Let me think. {}", "I will check the file again to be sure. ".repeat(300));
//! let provider = ScriptedProvider::new("scripted").reply_text(&chant).reply_text("The file is fine.");
//! let config = GuardrailsConfig::default();
//! let mut builder = Run::builder(LoopConfig::default()).user("Is the file fine?");
//! for guard in looprail_guardrails::default_stack(&config) {
//!     builder = builder.boxed_guard(guard);
//! }
//! let mut run = builder.build()?;
//! let driver = Driver::new(Arc::new(provider), ToolSet::new())
//!     .with_reply_watch(Arc::new(DegenerateReplies::new(config.degenerate_reply.clone())));
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let outcome = runtime.block_on(driver.drive(&mut run))?;
//! assert_eq!(outcome.final_text, "The file is fine.");
//! // The chanting reply was kept in the history cut where it began to repeat itself.
//! let first = run.messages().iter().find(|m| m.role == Role::Assistant).unwrap();
//! assert_eq!(first.joined_text().unwrap(), "Let me think. I will check the file again to be sure");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use looprail_loop_core::watch::{Degenerated, ReplyWatch, WatchReplies, WatchedPart};

use crate::repetition::{RepetitionConfig, RepetitionDetector};

/// Makes a [`DegenerateWatch`] per reply (nothing when the config is off).
#[derive(Debug, Clone)]
pub struct DegenerateReplies {
    config: RepetitionConfig,
}

impl DegenerateReplies {
    /// Watches with `config`.
    pub fn new(config: RepetitionConfig) -> Self {
        Self { config }
    }
}

impl WatchReplies for DegenerateReplies {
    fn watch(&self) -> Box<dyn ReplyWatch> {
        Box::new(DegenerateWatch::new(&self.config))
    }
}

/// One reply's detectors: its text's, and each call's arguments'.
#[derive(Debug)]
pub struct DegenerateWatch {
    config: RepetitionConfig,
    text: RepetitionDetector,
    arguments: HashMap<usize, RepetitionDetector>,
}

impl DegenerateWatch {
    /// A watch with `config` (one that finds nothing when `config.enabled` is false).
    pub fn new(config: &RepetitionConfig) -> Self {
        Self {
            config: config.clone(),
            text: RepetitionDetector::new(config, false),
            arguments: HashMap::new(),
        }
    }
}

impl ReplyWatch for DegenerateWatch {
    fn text(&mut self, delta: &str) -> Option<Degenerated> {
        if !self.config.enabled {
            return None;
        }
        let found = self.text.feed(delta)?;
        Some(Degenerated {
            part: WatchedPart::Text,
            keep: found.keep,
            period: found.period,
            repeats: found.repeats,
        })
    }

    fn arguments(&mut self, index: usize, delta: &str) -> Option<Degenerated> {
        if !self.config.enabled {
            return None;
        }
        let config = &self.config;
        let detector = self.arguments.entry(index).or_insert_with(|| RepetitionDetector::new(config, true));
        let found = detector.feed(delta)?;
        Some(Degenerated {
            part: WatchedPart::Arguments { index },
            keep: found.keep,
            period: found.period,
            repeats: found.repeats,
        })
    }
}
