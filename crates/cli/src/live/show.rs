//! What `run`, `resume`, `answer` and `resolve` print: events on stderr, the answer on stdout,
//! and the outcome as one line with its exit code.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use looprail::core::event::{Event, EventSink};
use looprail::core::outcome::{Outcome, StopCause};

/// Whether the answer streamed to stdout stopped mid-line: the next line printed (an event on
/// stderr, the outcome) ends it first, so a terminal never shows an event glued to the answer.
static MID_LINE: AtomicBool = AtomicBool::new(false);

/// Ends the answer's line on stdout when it stopped mid-line.
fn end_answer_line() {
    if MID_LINE.swap(false, Ordering::Relaxed) {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}

/// Streams text deltas to stdout and every other event, one line each, to stderr.
pub fn printer() -> EventSink {
    EventSink::new(|event| match event {
        Event::TextDelta { text } => {
            if text.is_empty() {
                return;
            }
            let mut out = std::io::stdout();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            MID_LINE.store(!text.ends_with('\n'), Ordering::Relaxed);
        }
        Event::TurnStarted { turn, cap } => {
            end_answer_line();
            eprintln!("[turn {turn}/{cap}]");
        }
        Event::StateChanged { .. } | Event::ModelResponded { .. } => {}
        other => {
            end_answer_line();
            eprintln!("[{}] {other}", other.name());
        }
    })
}

/// Prints the outcome of `run_id` and returns its exit code. `interrupted`: a shutdown signal
/// stopped the run, which is resumable.
pub fn show(run_id: &str, outcome: &Outcome, streamed: bool, interrupted: bool) -> u8 {
    if !streamed || outcome.fallback.is_some() {
        end_answer_line();
        println!("{}", outcome.final_text);
    } else {
        end_answer_line();
    }
    match &outcome.stop {
        StopCause::HandedToHuman { question } => {
            println!("The run waits for your answer: {}", one_line(question));
            eprintln!("answer it with: looprail answer {run_id} \"...\"");
        }
        StopCause::ResumeUnsafe { call_id, tool } => {
            println!(
                "The run waits for a human: call {call_id} of `{tool}` started before a crash and may or may not have taken effect."
            );
            eprintln!(
                "resolve it with: looprail resolve {run_id} {call_id} --done \"what it did\" | --retry | --skip"
            );
        }
        StopCause::ProviderFailed { message } => {
            eprintln!("error: the provider failed: {}", one_line(message))
        }
        StopCause::Cancelled if interrupted => {
            eprintln!("interrupted at a safe boundary; continue with: looprail resume {run_id}")
        }
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
