//! A run's next user turn: a new message after it completed, or a human's answer to the
//! question it waits on. Per-turn counters reset and a new stretch starts; totals and guard
//! histories carry on.

use super::EngineError;
use super::io::Effect;
use super::run::{Phase, Run};
use crate::message::{Message, ToolResult};
use crate::outcome::StopCause;
use crate::state::RunState;
use crate::store::CheckpointKind;

impl Run {
    /// Starts the next user turn of a conversation after the run completed (or while it
    /// waits for input). Per-turn counters reset; totals and guard histories carry on.
    pub fn begin_user_turn(&mut self, text: impl Into<String>) -> Result<(), EngineError> {
        if !matches!(self.core.state, RunState::Completed | RunState::WaitingForInput) {
            return Err(EngineError::WrongState {
                expected: "completed or waiting_for_input",
                actual: self.core.state,
            });
        }
        self.set_state(RunState::Running)?;
        self.messages.push(Message::user(text));
        self.start_user_turn();
        Ok(())
    }

    /// Answers the question of a run waiting on a human; the run continues at the next
    /// [`Input::Start`](crate::engine::Input::Start) with a fresh user turn. The answer becomes
    /// the result of the model's `ask_human` call, or, when a guard or policy handed the run
    /// to a human without such a call, the next user message.
    pub fn provide_human_reply(&mut self, text: impl Into<String>) -> Result<(), EngineError> {
        let message = match &self.core.phase {
            Phase::AwaitingHuman { call_id, .. } => {
                Message::tool_result(ToolResult::ok(call_id.clone(), text))
            }
            Phase::Finished { outcome } if matches!(outcome.stop, StopCause::HandedToHuman { .. }) => {
                Message::user(text)
            }
            _ => {
                return Err(EngineError::WrongState {
                    expected: "waiting_on_human",
                    actual: self.core.state,
                });
            }
        };
        self.set_state(RunState::Running)?;
        self.messages.push(message);
        self.start_user_turn();
        Ok(())
    }

    fn start_user_turn(&mut self) {
        // The stretch's clock starts at the next tick (time spent waiting for the user is not
        // the stretch's).
        self.core.counters.start_user_turn(None);
        self.core.partial_text.clear();
        self.core.phase = Phase::Ready;
        for guard in &mut self.guards {
            guard.on_user_turn();
        }
        self.policy.on_user_turn();
        self.effects.push_back(Effect::Checkpoint(CheckpointKind::Input));
    }
}
