//! The escalation ladder (F17): soft nudge → hard directive → forced `ask_human`.
//!
//! A detection climbs one level, never more, and only if at least `gap` calls passed since the
//! last climb, so one burst of repeats is not mistaken for three separate loops. A run that
//! goes `deescalate_after` calls without any detection steps one level down, so a run that
//! recovered does not jump straight to `ask_human` on its next small repeat. A new user message
//! (or the human's answer) resets the ladder.

use serde::{Deserialize, Serialize};

/// A rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// No intervention yet.
    #[default]
    None,
    /// A soft nudge: "try a different approach".
    Nudge,
    /// A hard directive: "your next step must be different".
    Directive,
    /// The next model call is forced to call `ask_human`.
    AskHuman,
}

impl Level {
    /// The stable name used in events and audit output.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Nudge => "nudge",
            Level::Directive => "directive",
            Level::AskHuman => "ask_human",
        }
    }

    fn up(self) -> Level {
        match self {
            Level::None => Level::Nudge,
            Level::Nudge => Level::Directive,
            Level::Directive | Level::AskHuman => Level::AskHuman,
        }
    }

    fn down(self) -> Level {
        match self {
            Level::None | Level::Nudge => Level::None,
            Level::Directive => Level::Nudge,
            Level::AskHuman => Level::Directive,
        }
    }
}

/// The ladder's state; plain serde data saved with the run (F20).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscalationLadder {
    level: Level,
    last_climb: Option<u64>,
    quiet_calls: u32,
    gap: u32,
    deescalate_after: u32,
}

impl EscalationLadder {
    /// A ladder at [`Level::None`].
    pub fn new(gap: u32, deescalate_after: u32) -> Self {
        Self { level: Level::None, last_climb: None, quiet_calls: 0, gap: gap.max(1), deescalate_after }
    }

    /// The current level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// A detection at call `call_index` that may climb at most to `cap`. Returns the new level
    /// when the ladder climbed.
    pub fn on_detection(&mut self, call_index: u64, cap: Level) -> Option<Level> {
        self.quiet_calls = 0;
        if self.level >= cap {
            return None;
        }
        if self.last_climb.is_some_and(|last| call_index < last.saturating_add(u64::from(self.gap))) {
            return None;
        }
        self.level = self.level.up();
        self.last_climb = Some(call_index);
        Some(self.level)
    }

    /// A detection between calls (a degenerate reply: no call to count a gap in): climbs one
    /// level, at most to `cap`, without the gap. Returns the new level when it climbed.
    pub fn escalate(&mut self, call_index: u64, cap: Level) -> Option<Level> {
        self.quiet_calls = 0;
        if self.level >= cap {
            return None;
        }
        self.level = self.level.up();
        self.last_climb = Some(call_index);
        Some(self.level)
    }

    /// A call without detection. Returns the new level when the ladder stepped down.
    pub fn on_quiet_call(&mut self) -> Option<Level> {
        if self.level == Level::None {
            return None;
        }
        self.quiet_calls += 1;
        if self.quiet_calls < self.deescalate_after {
            return None;
        }
        self.quiet_calls = 0;
        self.level = self.level.down();
        Some(self.level)
    }

    /// Back to [`Level::None`] (new user turn, or the human answered).
    pub fn reset(&mut self) {
        self.level = Level::None;
        self.last_climb = None;
        self.quiet_calls = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn climbs_one_level_at_a_time_respecting_the_gap() {
        let mut ladder = EscalationLadder::new(2, 8);
        assert_eq!(ladder.on_detection(5, Level::AskHuman), Some(Level::Nudge));
        assert_eq!(ladder.on_detection(6, Level::AskHuman), None, "inside the gap");
        assert_eq!(ladder.on_detection(7, Level::AskHuman), Some(Level::Directive));
        assert_eq!(ladder.on_detection(9, Level::AskHuman), Some(Level::AskHuman));
        assert_eq!(ladder.on_detection(11, Level::AskHuman), None, "already at the top");
    }

    #[test]
    fn a_capped_detector_cannot_climb_past_its_cap() {
        let mut ladder = EscalationLadder::new(1, 8);
        assert_eq!(ladder.on_detection(0, Level::Nudge), Some(Level::Nudge));
        assert_eq!(ladder.on_detection(5, Level::Nudge), None);
        assert_eq!(ladder.level(), Level::Nudge);
    }

    #[test]
    fn quiet_calls_step_down_and_detections_restart_the_count() {
        let mut ladder = EscalationLadder::new(1, 3);
        ladder.on_detection(0, Level::AskHuman);
        ladder.on_detection(1, Level::AskHuman);
        assert_eq!(ladder.level(), Level::Directive);
        assert_eq!(ladder.on_quiet_call(), None);
        assert_eq!(ladder.on_quiet_call(), None);
        ladder.on_detection(4, Level::Nudge); // at cap: no climb, but not quiet either
        assert_eq!(ladder.on_quiet_call(), None);
        assert_eq!(ladder.on_quiet_call(), None);
        assert_eq!(ladder.on_quiet_call(), Some(Level::Nudge));
        ladder.reset();
        assert_eq!(ladder.level(), Level::None);
    }
}
