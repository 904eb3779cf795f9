//! Live progress on stderr: one line per interesting event.

use looprail_loop_core::event::{Event, EventSink};

/// A sink that prints progress lines for `scenario` on stderr (nothing when `quiet`).
pub fn stderr_sink(scenario: &'static str, quiet: bool) -> EventSink {
    if quiet {
        return EventSink::none();
    }
    EventSink::new(move |event| {
        let line = match event {
            Event::TurnStarted { turn, cap } => format!("turn {turn}/{cap}"),
            Event::LimitsReached { reason } => format!("limits_reached: {reason:?}"),
            Event::StateChanged { to, .. } => format!("state -> {to:?}"),
            Event::TextDelta { .. } | Event::ModelResponded { .. } | Event::RunStarted { .. } => return,
            other => other.to_string(),
        };
        eprintln!("  [{scenario}] {line}");
    })
}
