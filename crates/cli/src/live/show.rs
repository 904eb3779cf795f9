//! What `run`, `resume`, `answer` and `resolve` print: events on stderr, the answer on stdout,
//! and the outcome as one line with its exit code.

use std::io::Write;

use looprail::core::event::{Event, EventSink};
use looprail::core::outcome::{Outcome, StopCause};

/// Streams text deltas to stdout and every other event, one line each, to stderr.
pub fn printer() -> EventSink {
    EventSink::new(|event| match event {
        Event::TextDelta { text } => {
            let mut out = std::io::stdout();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        Event::TurnStarted { turn, cap } => eprintln!("[turn {turn}/{cap}]"),
        Event::StateChanged { .. } | Event::ModelResponded { .. } => {}
        other => eprintln!("[{}] {other}", other.name()),
    })
}

/// Prints the outcome of `run_id` and returns its exit code. `interrupted`: a shutdown signal
/// stopped the run, which is resumable.
pub fn show(run_id: &str, outcome: &Outcome, streamed: bool, interrupted: bool) -> u8 {
    if !streamed || outcome.fallback.is_some() {
        println!("{}", outcome.final_text);
    } else {
        println!();
    }
    match &outcome.stop {
        StopCause::HandedToHuman { question } => {
            println!("The run waits for your answer: {}", one_line(question));
            eprintln!("answer it with: looprail answer --provider ... --model ... {run_id} \"...\"");
        }
        StopCause::ResumeUnsafe { call_id, tool } => {
            println!(
                "The run waits for a human: call {call_id} of `{tool}` started before a crash and may or may not have taken effect."
            );
            eprintln!(
                "resolve it with: looprail resolve --provider ... --model ... {run_id} {call_id} --done \"what it did\" | --retry | --skip"
            );
        }
        StopCause::ProviderFailed { message } => {
            eprintln!("error: the provider failed: {}", one_line(message))
        }
        StopCause::Cancelled if interrupted => eprintln!(
            "interrupted at a safe boundary; continue with: looprail resume --provider ... --model ... {run_id}"
        ),
        _ => {}
    }
    let estimated = match outcome.usage.estimated_tokens {
        0 => String::new(),
        n => format!(" ({n} estimated: the provider reported no usage)"),
    };
    eprintln!(
        "[{:?}] {} turns, {} tool calls, {} tokens{estimated}, cost {:.4}",
        outcome.state,
        outcome.turns,
        outcome.tool_calls,
        outcome.usage.total(),
        outcome.cost
    );
    crate::exit::for_outcome(outcome)
}

/// `text` on one line: whitespace runs (CRLFs included) folded, cut at 300 characters.
pub fn one_line(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &folded[..cut]),
        None => folded,
    }
}
