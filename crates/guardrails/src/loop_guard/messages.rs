//! What the [`LoopGuard`](super::LoopGuard) says to the model at each rung, and after a
//! reply it cut for repeating itself.

/// The most of a cut reply quoted back to the model.
const QUOTED_MAX: usize = 200;

/// What the ladder speaks about: a call repeated, or a reply that repeated itself.
#[derive(Clone, Copy)]
pub(super) enum Subject<'a> {
    Call(&'a str),
    Reply,
}

pub(super) fn nudge(subject: Subject<'_>) -> String {
    match subject {
        Subject::Call(tool) => format!(
            "You have repeated calls to `{tool}` that keep producing the same kind of result. Doing it \
             again will not change the outcome: try a different approach or a different tool."
        ),
        Subject::Reply => "Your last reply kept repeating the same text and was cut off. Do not repeat \
             yourself: say what you mean once, then give your answer or take a different next step."
            .to_owned(),
    }
}

pub(super) fn directive(subject: Subject<'_>) -> String {
    match subject {
        Subject::Call(tool) => format!(
            "Stop repeating `{tool}`: your recent attempts did not move the task forward. Your next \
             step must be different: change the arguments substantially, use another tool, or state \
             plainly what is blocking you."
        ),
        Subject::Reply => "Your replies keep falling into repeating the same text. Answer in a few \
             plain sentences, each said once, or state plainly what is blocking you."
            .to_owned(),
    }
}

pub(super) fn ask_human(subject: Subject<'_>, ask_tool: &str) -> String {
    match subject {
        Subject::Call(tool) => format!(
            "You appear to be stuck in a loop around `{tool}`. Call `{ask_tool}` now: say what you \
             tried, what happened, and what you need from the human to continue."
        ),
        Subject::Reply => format!(
            "Your replies keep repeating themselves. Call `{ask_tool}` now: say briefly what you \
             were doing and what you need from the human to continue."
        ),
    }
}

/// What the model reads after its first degenerate reply: the end of what it kept repeating.
pub(super) fn recovery(cut: Option<&str>) -> String {
    let cut = cut.unwrap_or_default().trim_end();
    let mut from = cut.len().saturating_sub(QUOTED_MAX);
    while !cut.is_char_boundary(from) {
        from += 1;
    }
    let quoted = &cut[from..];
    if quoted.is_empty() {
        return "Your last reply was cut off: its tool call's arguments kept repeating the same text. \
                Make the call again with arguments that say each thing once, or take another step."
            .to_owned();
    }
    format!(
        "Your last reply was cut off because it kept repeating the same text; it ended with: \
         \"{}{quoted}\". Do not repeat it. Continue from there: say each thing once, then give \
         your answer or take your next step.",
        if from > 0 { "…" } else { "" }
    )
}
