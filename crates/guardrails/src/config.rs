//! Configuration of the detectors and the ladder, with the defaults tuned on recorded runs
//! (see `docs/guardrails.md` for the figures). Unknown keys and out-of-range values are
//! rejected with an error naming the key.

use serde::{Deserialize, Serialize};

use looprail_loop_core::config::{ConfigError, parse_json};

use crate::ladder::Level;

/// What the repeat counter (F18) does past its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepeatAction {
    /// Stop the run with a loop error carrying tool, arguments and count.
    Abort,
    /// Do not run the tool; answer with a synthetic result flagged `loop-detected`.
    Hint,
}

/// The repeat counter's settings (F18, S3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RepeatCounterConfig {
    /// Calls of one (tool, arguments) allowed; the next one triggers the action.
    pub max_repeats: u32,
    /// What happens then.
    pub action: RepeatAction,
    /// Per-tool limits that replace `max_repeats` (B2), e.g. for status checks.
    pub per_tool: std::collections::BTreeMap<String, u32>,
    /// Distinct (tool, arguments) kept; past this, calls seen once are forgotten first.
    pub max_entries: usize,
}

impl Default for RepeatCounterConfig {
    fn default() -> Self {
        Self { max_repeats: 3, action: RepeatAction::Hint, per_tool: Default::default(), max_entries: 4096 }
    }
}

/// A loop detector the [`LoopGuard`](crate::LoopGuard) can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectorKind {
    /// Repetition without novelty (B10): the default.
    Novelty,
    /// Identical and pattern thrash in a window (F16, S2).
    Thrash,
    /// Alternating cycles (B3).
    Cycle,
    /// The same action with the same observation in a window (B3).
    SameObservation,
}

/// Named settings: the default and the sources' literal rules, for users who want them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// The default: novelty-aware detection (B10) feeding the ladder, a novelty-aware backstop
    /// and a reflection on repeated errors.
    #[default]
    Novelty,
    /// S2 as written: identical thrash 3-in-6 and pattern thrash 4-in-6 each climbing the whole
    /// ladder, a climb per detection, no step down, no reset on a user message.
    S2Literal,
    /// S1 as written: the 3rd identical step in a row stops the run (F15).
    S1Consecutive,
    /// S3's recommendation: the 4th call of one (tool, arguments) gets a `loop-detected` hint
    /// instead of running (F18).
    S3RepeatHint,
    /// S0 as written: a reflection after 3 tool errors in a row (F19), nothing else.
    S0Reflection,
    /// looprail 0.1's default: thrash (pattern capped at a nudge), cycles and same
    /// observations feeding the ladder.
    Looprail01,
    /// gemini-cli's tool-call rule: the 5th identical call in a row ends the turn.
    GeminiCli,
    /// Roo-Code's repetition rule: a 4th identical call in a row is refused and the user
    /// asked (here: the run stops there).
    RooCode,
    /// OpenHands' stuck detector: the same action and observation 4 times in a row, the same
    /// failing action 3 times, or A-B-A-B-A-B with the same observations, ends the run.
    OpenhandsStuck,
}

impl Preset {
    /// Every preset, the default first.
    pub const ALL: [Preset; 9] = [
        Preset::Novelty,
        Preset::S2Literal,
        Preset::S1Consecutive,
        Preset::S3RepeatHint,
        Preset::S0Reflection,
        Preset::Looprail01,
        Preset::GeminiCli,
        Preset::RooCode,
        Preset::OpenhandsStuck,
    ];

    /// The name used in config files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Novelty => "novelty",
            Preset::S2Literal => "s2-literal",
            Preset::S1Consecutive => "s1-consecutive",
            Preset::S3RepeatHint => "s3-repeat-hint",
            Preset::S0Reflection => "s0-reflection",
            Preset::Looprail01 => "looprail-0.1",
            Preset::GeminiCli => "gemini-cli",
            Preset::RooCode => "roo-code",
            Preset::OpenhandsStuck => "openhands-stuck",
        }
    }

    /// The preset named `name`.
    pub fn from_name(name: &str) -> Option<Preset> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The full configuration of this preset.
    pub fn config(self) -> GuardrailsConfig {
        let base = GuardrailsConfig::default();
        let nothing =
            GuardrailsConfig { detectors: Vec::new(), consecutive_stop: 0, error_streak: 0, ..base.clone() };
        match self {
            Preset::Novelty => base,
            Preset::S2Literal => GuardrailsConfig {
                detectors: vec![DetectorKind::Thrash],
                pattern_max_level: Level::AskHuman,
                escalation_gap: 1,
                deescalate_after: u32::MAX,
                reset_on_user_turn: false,
                ..nothing
            },
            Preset::S1Consecutive => GuardrailsConfig { consecutive_steps: 3, ..nothing },
            Preset::S3RepeatHint => {
                GuardrailsConfig { repeat_counter: Some(RepeatCounterConfig::default()), ..nothing }
            }
            Preset::S0Reflection => {
                GuardrailsConfig { error_streak: 3, error_streak_repeats_only: false, ..nothing }
            }
            Preset::Looprail01 => GuardrailsConfig {
                detectors: vec![DetectorKind::Thrash, DetectorKind::Cycle, DetectorKind::SameObservation],
                error_streak_repeats_only: false,
                escalation_gap: 2,
                ..base
            },
            Preset::GeminiCli => GuardrailsConfig { consecutive_steps: 5, ..nothing },
            Preset::RooCode => GuardrailsConfig { consecutive_steps: 4, ..nothing },
            Preset::OpenhandsStuck => GuardrailsConfig { stuck_patterns: true, ..nothing },
        }
    }
}

/// Settings of the loop-detection stack. Every key has a default; `preset` (in a config file)
/// starts from a [`Preset`] and the other keys given override it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "GuardrailsFile")]
pub struct GuardrailsConfig {
    /// The detectors feeding the ladder, in order.
    pub detectors: Vec<DetectorKind>,
    /// Novelty (B10): stale calls in a row (calls that add no new (call, observation) pair)
    /// that lead to a nudge.
    pub novelty_after: u32,
    /// Novelty: further stale calls in a row for each next rung (directive, then `ask_human`).
    pub novelty_step: u32,
    /// Novelty: distinct (call, observation) pairs remembered; an older pair counts as new.
    pub novelty_memory: u32,
    /// Novelty: the same call (tool and arguments) this many times in a row leads to a nudge
    /// whatever its outputs: insurance for a repetition whose outputs all look new (0 = off).
    pub identical_call_nudge: u32,
    /// Calls in the thrash window (F16).
    pub window: u32,
    /// Identical thrash: the same (tool, arguments) this many times in the window (F16).
    pub identical_threshold: u32,
    /// Pattern thrash: the same tool this many times in the window with differing arguments.
    pub pattern_threshold: u32,
    /// Highest ladder level pattern thrash alone can reach.
    pub pattern_max_level: Level,
    /// Alternating cycles (B3): a block of 2..=`cycle_max_period` calls repeated this often.
    pub cycle_repetitions: u32,
    /// Longest cycle looked for.
    pub cycle_max_period: u32,
    /// Same action, same observation (B3, B4): this many identical pairs in the window below.
    pub same_observation_threshold: u32,
    /// Calls looked back on for same-observation pairs.
    pub same_observation_window: u32,
    /// Calls between two escalations: a detection sooner than this does not climb again.
    pub escalation_gap: u32,
    /// Sustained progress: calls that bring something new (with no detection) after which the
    /// ladder steps one level down, and after which a loop interrupted by a detour is forgotten
    /// (a loop that comes back sooner continues where it stopped).
    pub deescalate_after: u32,
    /// Backstop for models that ignore the ladder: the same whole step with the same
    /// observations this many times in a row stops the run (0 switches it off).
    pub consecutive_stop: u32,
    /// F15 (S1) as a standalone guard: the same step this many times in a row stops the run
    /// before its tools run, whatever they return (0 = off, the default).
    pub consecutive_steps: u32,
    /// Consecutive tool errors that inject a reflection message (F19, 0 = off).
    pub error_streak: u32,
    /// Reflect only when the error streak holds a repeated error (the same call failing the
    /// same way); errors that all differ are the agent trying different things (B10).
    pub error_streak_repeats_only: bool,
    /// The per-executor repeat counter (F18); off by default (see the tuning guide).
    pub repeat_counter: Option<RepeatCounterConfig>,
    /// Tools whose repeated calls are expected (status polls): never counted by detectors (B2).
    pub polling_tools: Vec<String>,
    /// A tool forced at the directive level, if any (the ask_human level always forces
    /// `ask_human`).
    pub directive_tool: Option<String>,
    /// A new user message resets windows, streaks and the ladder (the repeat counter lives as
    /// long as the run).
    pub reset_on_user_turn: bool,
    /// OpenHands' stuck rules as a guard that stops the run ([`StuckPatterns`](crate::StuckPatterns));
    /// off but in the `openhands-stuck` preset.
    pub stuck_patterns: bool,
    /// Degenerate replies (B14): a reply repeating itself is cut while it streams and the model
    /// is told what it repeated; another within three replies climbs the ladder
    /// ([`repetition`](crate::repetition)).
    pub degenerate_reply: crate::repetition::RepetitionConfig,
}

impl Default for GuardrailsConfig {
    fn default() -> Self {
        Self {
            detectors: vec![DetectorKind::Novelty],
            novelty_after: 2,
            novelty_step: 2,
            novelty_memory: 256,
            identical_call_nudge: 5,
            window: 6,
            identical_threshold: 3,
            pattern_threshold: 4,
            pattern_max_level: Level::Nudge,
            cycle_repetitions: 3,
            cycle_max_period: 5,
            same_observation_threshold: 4,
            same_observation_window: 20,
            escalation_gap: 1,
            deescalate_after: 8,
            consecutive_stop: 12,
            consecutive_steps: 0,
            error_streak: 3,
            error_streak_repeats_only: true,
            repeat_counter: None,
            polling_tools: Vec::new(),
            directive_tool: None,
            reset_on_user_turn: true,
            stuck_patterns: false,
            degenerate_reply: crate::repetition::RepetitionConfig::default(),
        }
    }
}

/// Writes the `GuardrailsFile` mirror of [`GuardrailsConfig`]: every key optional, plus
/// `preset`, so a file can start from a preset and override single keys.
macro_rules! guardrails_file {
    ($($key:ident: $ty:ty),* $(,)?) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct GuardrailsFile {
            #[serde(default)]
            preset: Preset,
            $(#[serde(default)] $key: Option<$ty>,)*
        }

        impl From<GuardrailsFile> for GuardrailsConfig {
            fn from(file: GuardrailsFile) -> Self {
                let mut config = file.preset.config();
                $(if let Some(value) = file.$key { config.$key = value; })*
                config
            }
        }
    };
}

guardrails_file! {
    detectors: Vec<DetectorKind>,
    novelty_after: u32,
    novelty_step: u32,
    novelty_memory: u32,
    identical_call_nudge: u32,
    window: u32,
    identical_threshold: u32,
    pattern_threshold: u32,
    pattern_max_level: Level,
    cycle_repetitions: u32,
    cycle_max_period: u32,
    same_observation_threshold: u32,
    same_observation_window: u32,
    escalation_gap: u32,
    deescalate_after: u32,
    consecutive_stop: u32,
    consecutive_steps: u32,
    error_streak: u32,
    error_streak_repeats_only: bool,
    repeat_counter: Option<RepeatCounterConfig>,
    polling_tools: Vec<String>,
    directive_tool: Option<String>,
    reset_on_user_turn: bool,
    stuck_patterns: bool,
    degenerate_reply: crate::repetition::RepetitionConfig,
}

impl GuardrailsConfig {
    /// Parses and validates a JSON document.
    pub fn from_json_str(json: &str) -> Result<Self, ConfigError> {
        let config: Self = parse_json(json)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every range; the first problem names its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let check = |ok: bool, key: &str, message: &str| {
            if ok { Ok(()) } else { Err(ConfigError::new(key, message)) }
        };
        check(self.novelty_after >= 1, "novelty_after", "must be at least 1")?;
        check(self.novelty_step >= 1, "novelty_step", "must be at least 1")?;
        check(
            (16..=65_536).contains(&self.novelty_memory),
            "novelty_memory",
            "must be between 16 and 65536",
        )?;
        check(self.identical_call_nudge != 1, "identical_call_nudge", "must be 0 (off) or at least 2")?;
        check((2..=64).contains(&self.window), "window", "must be between 2 and 64")?;
        check(
            (2..=self.window).contains(&self.identical_threshold),
            "identical_threshold",
            "must be between 2 and `window`",
        )?;
        check(
            (2..=self.window).contains(&self.pattern_threshold),
            "pattern_threshold",
            "must be between 2 and `window`",
        )?;
        check(self.cycle_repetitions >= 2, "cycle_repetitions", "must be at least 2")?;
        check((2..=8).contains(&self.cycle_max_period), "cycle_max_period", "must be between 2 and 8")?;
        check(self.same_observation_threshold >= 2, "same_observation_threshold", "must be at least 2")?;
        check(
            (self.same_observation_threshold..=256).contains(&self.same_observation_window),
            "same_observation_window",
            "must be between `same_observation_threshold` and 256",
        )?;
        check(self.escalation_gap >= 1, "escalation_gap", "must be at least 1")?;
        check(self.deescalate_after >= 1, "deescalate_after", "must be at least 1")?;
        check(self.consecutive_stop != 1, "consecutive_stop", "must be 0 (off) or at least 2")?;
        check(self.consecutive_steps != 1, "consecutive_steps", "must be 0 (off) or at least 2")?;
        let mut kinds = self.detectors.clone();
        kinds.sort_unstable();
        kinds.dedup();
        check(kinds.len() == self.detectors.len(), "detectors", "names a detector twice")?;
        self.degenerate_reply
            .validate()
            .map_err(|e| ConfigError::new(format!("degenerate_reply.{}", e.key), e.message))?;
        if let Some(repeat) = &self.repeat_counter {
            check(repeat.max_repeats >= 1, "repeat_counter.max_repeats", "must be at least 1")?;
            check(repeat.max_entries >= 16, "repeat_counter.max_entries", "must be at least 16")?;
            for (tool, limit) in &repeat.per_tool {
                check(*limit >= 1, &format!("repeat_counter.per_tool.{tool}"), "must be at least 1")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
