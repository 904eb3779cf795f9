//! What a log records around its model replies besides their content: when each request went
//! out, which model answered and the usage the provider reported. With it the replay spends a
//! run's cost and time as a live run does, so `budget.cost_limit` and the soft and hard time
//! limits are replayed; without it (a log that records none) costs are estimated and no time
//! passes.

use std::time::Duration;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::provider::Usage;

/// One model reply of a log, as recorded beside its content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedReply {
    /// When its request went out, in ms since the epoch, as near as the log tells (the time of
    /// the last line before the reply).
    pub sent_ms: Option<i64>,
    /// The model that answered.
    pub model: Option<String>,
    /// The usage the provider reported for it.
    pub usage: Option<Usage>,
}

/// A run's recorded replies: the k-th for the run's k-th assistant message.
///
/// ```
/// use looprail_guardrails::replay::{RecordedReply, Timeline};
///
/// let timeline = Timeline::new(vec![
///     RecordedReply { sent_ms: Some(1_000), ..Default::default() },
///     RecordedReply { sent_ms: Some(61_000), ..Default::default() },
/// ]);
/// assert_eq!(timeline.elapsed(1).as_secs(), 60);
/// assert_eq!(timeline.elapsed(7).as_secs(), 0, "no such reply: no time");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    replies: Vec<RecordedReply>,
    started_ms: Option<i64>,
}

impl Timeline {
    /// The timeline of these replies; the run starts at the first reply's request.
    pub fn new(mut replies: Vec<RecordedReply>) -> Self {
        // A clock that stepped back (a log merged from machines) never makes time run backwards.
        let mut latest = None;
        for reply in &mut replies {
            if let Some(at) = reply.sent_ms {
                let at = latest.map_or(at, |l: i64| l.max(at));
                reply.sent_ms = Some(at);
                latest = Some(at);
            }
        }
        let started_ms = replies.iter().find_map(|r| r.sent_ms);
        Self { replies, started_ms }
    }

    /// Whether the log recorded anything: times, models or usage.
    pub fn is_empty(&self) -> bool {
        self.replies.iter().all(|r| r.sent_ms.is_none() && r.model.is_none() && r.usage.is_none())
    }

    /// The `k`-th reply's record, if the log has one.
    pub fn reply(&self, k: usize) -> Option<&RecordedReply> {
        self.replies.get(k)
    }

    /// The run's time when the `k`-th reply's request went out (zero when unknown; never
    /// backwards from an earlier reply's).
    pub fn elapsed(&self, k: usize) -> Duration {
        let (Some(start), Some(at)) = (self.started_ms, self.reply(k).and_then(|r| r.sent_ms)) else {
            return Duration::ZERO;
        };
        Duration::from_millis(u64::try_from(at.saturating_sub(start)).unwrap_or(0))
    }

    /// The usage the `k`-th reply spent: the recorded one, else `estimated`.
    pub fn usage<'a>(&'a self, k: usize, estimated: &'a Usage) -> &'a Usage {
        self.reply(k).and_then(|r| r.usage.as_ref()).unwrap_or(estimated)
    }

    /// What `usage` cost for the `k`-th reply at `config`'s prices (by its recorded model; no
    /// model, no price).
    pub fn cost(&self, k: usize, config: &LoopConfig, usage: &Usage) -> f64 {
        let model = self.reply(k).and_then(|r| r.model.as_deref()).unwrap_or_default();
        config.prices.cost(model, usage)
    }
}
