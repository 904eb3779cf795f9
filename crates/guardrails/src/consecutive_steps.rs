//! Consecutive identical tool-call steps (F15, S1).

use serde::{Deserialize, Serialize};

use looprail_loop_core::config::ConfigError;
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{
    Decision, Guard, GuardStateError, TurnView, state_from_value, state_to_value,
};
use looprail_loop_core::outcome::StopCause;
use looprail_loop_core::provider::ModelResponse;

use crate::signature::{CallSignature, Fnv64};

/// Stops the run, before the tools run, when the model asks for the same step (the batch's
/// tool names and canonical arguments) `max_steps` times in a row. A different step in between
/// resets the count; so does a new user message. S1's rule with its default of 3.
///
/// On recorded runs this rule also stops healthy runs that retry a command three times and
/// move on, so the default stack leaves it out (the `s1-consecutive` preset switches it on,
/// see `GuardrailsConfig::consecutive_steps`).
///
/// ```
/// use looprail_guardrails::ConsecutiveSteps;
/// assert!(ConsecutiveSteps::new(1).is_err(), "refused, not silently raised");
/// assert_eq!(ConsecutiveSteps::new(3).unwrap().count(), 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsecutiveSteps {
    max_steps: u32,
    last: Option<u64>,
    count: u32,
    calls_seen: u64,
}

impl ConsecutiveSteps {
    /// Stops at the `max_steps`-th identical step in a row; `max_steps` must be at least 2
    /// (the error names the key `consecutive_steps`).
    pub fn new(max_steps: u32) -> Result<Self, ConfigError> {
        if max_steps < 2 {
            return Err(ConfigError::new("consecutive_steps", "must be at least 2"));
        }
        Ok(Self { max_steps, last: None, count: 0, calls_seen: 0 })
    }

    /// Identical steps in a row so far.
    pub fn count(&self) -> u32 {
        self.count
    }
}

impl Default for ConsecutiveSteps {
    /// S1's default: the 3rd identical step stops the run.
    fn default() -> Self {
        Self { max_steps: 3, last: None, count: 0, calls_seen: 0 }
    }
}

impl Guard for ConsecutiveSteps {
    fn name(&self) -> &str {
        "consecutive_steps"
    }

    fn after_response(&mut self, _view: &TurnView<'_>, response: &ModelResponse) -> Vec<Decision> {
        if response.tool_calls.is_empty() {
            return Vec::new();
        }
        let mut h = Fnv64::default();
        for call in &response.tool_calls {
            h.write(&CallSignature::of(&call.name, &call.arguments).call.to_le_bytes());
        }
        let step = h.finish();
        let first_index = self.calls_seen;
        self.calls_seen += response.tool_calls.len() as u64;
        if self.last == Some(step) {
            self.count += 1;
        } else {
            self.last = Some(step);
            self.count = 1;
        }
        if self.count < self.max_steps {
            return Vec::new();
        }
        let tool = response.tool_calls[0].name.clone();
        vec![
            Decision::Emit(Event::LoopDetected {
                call_index: first_index,
                detector: "consecutive_steps".into(),
                tier: "identical_steps".into(),
                tool: tool.clone(),
                level: "stop".into(),
                evidence: Vec::new(),
            }),
            Decision::Stop(StopCause::LoopDetected {
                detector: "consecutive_steps".into(),
                detail: format!("the same step on `{tool}` {} times in a row", self.count),
                evidence: None,
            }),
        ]
    }

    fn on_user_turn(&mut self) {
        self.last = None;
        self.count = 0;
    }

    fn save_state(&self) -> serde_json::Value {
        state_to_value(self)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        *self = state_from_value("consecutive_steps", state)?;
        Ok(())
    }
}
