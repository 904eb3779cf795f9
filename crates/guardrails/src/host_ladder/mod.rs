//! The escalation ladder as an agent's host runs it when all it can do is answer each tool call
//! (a coding CLI's hooks, a framework's guard in process): the guards' nudges go with a call's
//! result, and the ladder's later rungs become answers to the calls that follow.
//!
//! 1. The guards' directive names the call that keeps coming back: the next identical call is
//!    denied, the model told why ([`HostLadder::denial`]).
//! 2. The same call once more: the human is asked whether the agent may go on.
//! 3. Once more, or a loop seen again after the human was asked: the agent is stopped.
//!
//! A different call that draws no remark clears the denial: the agent moved on. The state is
//! two fields, kept by the host between calls (the hook in its store, the in-process guard in
//! its saved JSON) and reset at each message from the user.
//!
//! ```
//! use looprail_guardrails::host_ladder::{AfterResult, BeforeCall, Heard, HostLadder};
//!
//! let mut ladder = HostLadder::default();
//! let directive = Heard { remark: true, directive: true, ask: false };
//! assert_eq!(ladder.after_result(Some(("bash", r#"{"cmd":"make"}"#)), directive), AfterResult::Remark);
//! assert!(matches!(ladder.before_call("bash", r#"{"cmd": "make"}"#), BeforeCall::Deny(_)));
//! assert_eq!(ladder.before_call("bash", r#"{"cmd":"make"}"#), BeforeCall::Ask);
//! ladder.asked = true;
//! assert_eq!(ladder.before_call("bash", r#"{"cmd":"make"}"#), BeforeCall::Stop);
//! ```

use serde::{Deserialize, Serialize};

use crate::signature::CallSignature;

/// Where every text looprail gives an agent or its user starts, so both know its source.
pub const TAG: &str = "[looprail]";

/// A call the ladder's directive named: the next identical one is denied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// The call's signature (tool and canonical arguments).
    pub call: u64,
    /// What the model reads when it is denied.
    pub reason: String,
    /// How many times the call came again since.
    #[serde(default)]
    pub repeats: u32,
}

/// The ladder's state in one stretch (since the user's last message).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLadder {
    /// The call to deny if it comes again.
    #[serde(default)]
    pub deny: Option<Denial>,
    /// The human was asked in this stretch.
    #[serde(default)]
    pub asked: bool,
}

/// What the host does with a call before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeCall {
    /// It runs.
    Run,
    /// It is answered with this text instead of running.
    Deny(String),
    /// The human decides whether the agent goes on (the host words the question, [`question`]).
    Ask,
    /// The agent kept repeating the call after it was denied (and the human was asked): stop.
    Stop,
}

/// What the guards said at a call's result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heard {
    /// They had a remark (a nudge or a directive) for the model.
    pub remark: bool,
    /// The ladder reached its directive.
    pub directive: bool,
    /// They want the human asked.
    pub ask: bool,
}

/// What the host does after a call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterResult {
    /// The human was asked and the guards see a loop again: stop.
    StillLooping,
    /// Ask the human.
    Ask,
    /// Give the model the guards' remark with the result.
    Remark,
    /// Nothing to say.
    Quiet,
}

impl HostLadder {
    /// The ladder's answer to a call before it runs.
    pub fn before_call(&mut self, tool: &str, arguments: &str) -> BeforeCall {
        let signature = CallSignature::of(tool, arguments).call;
        let Some(denial) = self.deny.as_mut().filter(|d| d.call == signature) else {
            return BeforeCall::Run;
        };
        // The ladder goes on as the call repeats: denied once, then the human asked, then the
        // agent stopped. (A denied call never runs, so the guards learn nothing new from it.)
        denial.repeats += 1;
        match denial.repeats {
            1 => BeforeCall::Deny(denial.reason.clone()),
            2 if !self.asked => BeforeCall::Ask,
            _ => BeforeCall::Stop,
        }
    }

    /// What follows what the guards said (`heard`) at the result of `call` (tool and arguments;
    /// `None` when they spoke at a reply rather than at a call's result).
    pub fn after_result(&mut self, call: Option<(&str, &str)>, heard: Heard) -> AfterResult {
        if self.asked && (heard.ask || heard.directive || heard.remark) {
            return AfterResult::StillLooping;
        }
        if heard.ask {
            return AfterResult::Ask;
        }
        if heard.directive
            && let Some((tool, arguments)) = call
        {
            let call = CallSignature::of(tool, arguments).call;
            self.deny = Some(Denial { call, reason: Self::denial(tool), repeats: 0 });
        }
        if !heard.remark {
            // A call that drew no remark: the agent moved on from the denied one. (The call's
            // signature is read only when a denial is pending: not at every result.)
            if let (Some((tool, arguments)), Some(denial)) = (call, &self.deny)
                && denial.call != CallSignature::of(tool, arguments).call
            {
                self.deny = None;
            }
            return AfterResult::Quiet;
        }
        AfterResult::Remark
    }

    /// What a denied call's model reads.
    pub fn denial(tool: &str) -> String {
        format!(
            "{TAG} Denied: this exact `{tool}` call was already made and did not move the task \
             forward. Do something different, or say plainly what is blocking you."
        )
    }
}

/// What the human is asked when the agent seems stuck around `tool`.
pub fn question(tool: &str) -> String {
    format!(
        "{TAG} The agent appears to be stuck in a loop around `{tool}` (the same calls, nothing new \
         learned). Let it go on?"
    )
}

#[cfg(test)]
mod tests;
