//! Strategies for realistic tool-call histories. Each is parameterised by a [`Shape`] (tool
//! names, argument size) and a length, and shrinks toward a short, readable history.
//!
//! Names and outputs use letter words (`ab`, `kq`), not numbers, where they must differ:
//! detectors mask numbers as volatile, so `result 3` and `result 4` are the same observation.

use std::ops::Range;

use proptest::prelude::*;
use serde_json::json;

use super::history::{History, Step};

/// The tools and argument sizes histories are made of.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Names for exploring tools (read, search, list...).
    pub tools: Vec<String>,
    /// The tool that changes things (`edit`).
    pub edit_tool: String,
    /// The tool that runs commands (`bash`).
    pub run_tool: String,
    /// Characters of padding added to each call's arguments (large arguments, such as a
    /// patch, are realistic).
    pub argument_padding: usize,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            tools: vec!["read_file".into(), "search".into(), "list_dir".into()],
            edit_tool: "edit_file".into(),
            run_tool: "bash".into(),
            argument_padding: 0,
        }
    }
}

impl Shape {
    fn pad(&self) -> String {
        "·".repeat(self.argument_padding)
    }

    fn tool(&self, index: usize) -> &str {
        self.tools.get(index % self.tools.len().max(1)).map_or("read_file", String::as_str)
    }
}

/// A word made of letters for `n` (`a`, `b`, ... `ba`), never masked as a number.
pub fn word(n: usize) -> String {
    let mut n = n;
    let mut out = Vec::new();
    loop {
        out.push(b'a' + (n % 26) as u8);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Exploration where every call is new: a different target each time, a different output.
pub fn novel_exploration(shape: &Shape, len: Range<usize>) -> impl Strategy<Value = History> + use<> {
    let shape = shape.clone();
    prop::collection::vec((0usize..8, 0usize..1000), len).prop_map(move |picks| {
        History::new(
            picks
                .iter()
                .enumerate()
                .map(|(i, (tool, salt))| {
                    let target = format!("{}_{}", word(i), word(*salt));
                    Step::call(
                        shape.tool(*tool),
                        json!({"target": target, "pad": shape.pad()}),
                        format!("contents of {target}: {} lines", 10 + salt),
                    )
                })
                .collect(),
        )
    })
}

/// Edit → test cycles: a different edit, then the same test command, whose output changes
/// as the work progresses (the last cycle passes).
pub fn edit_test_cycles(shape: &Shape, cycles: Range<usize>) -> impl Strategy<Value = History> + use<> {
    let shape = shape.clone();
    prop::collection::vec(0usize..1000, cycles).prop_map(move |salts| {
        let n = salts.len();
        let mut steps = Vec::new();
        for (i, salt) in salts.iter().enumerate() {
            let hunk = format!("{}-{}", word(i), word(*salt));
            steps.push(Step::call(
                &shape.edit_tool,
                json!({"path": "src/parser.rs", "patch": format!("fix {hunk}"), "pad": shape.pad()}),
                format!("patched src/parser.rs ({hunk})"),
            ));
            let output = if i + 1 == n {
                "test result: ok. all passed".to_owned()
            } else {
                format!("test result: FAILED. failing: parser::{}", word(i + salt))
            };
            steps.push(Step::call(&shape.run_tool, json!({"command": "cargo test"}), output));
        }
        History::new(steps)
    })
}

/// Polling: the same call every time, its output growing (a build log, a job's progress).
pub fn polling(shape: &Shape, len: Range<usize>) -> impl Strategy<Value = History> + use<> {
    let shape = shape.clone();
    prop::collection::vec(1usize..4, len).prop_map(move |growth| {
        let mut log = String::from("build started");
        History::new(
            growth
                .iter()
                .enumerate()
                .map(|(i, lines)| {
                    for l in 0..*lines {
                        log.push_str(&format!("\ncompiled {}", word(i * 4 + l)));
                    }
                    Step::call(&shape.run_tool, json!({"command": "tail build.log"}), log.clone())
                })
                .collect(),
        )
    })
}

/// An identical call with an unchanged output, except for volatile numbers (timestamps,
/// durations) that detectors must see through.
pub fn identical_loop(shape: &Shape, len: Range<usize>) -> impl Strategy<Value = History> + use<> {
    let shape = shape.clone();
    prop::collection::vec(0u32..100_000, len).prop_map(move |noise| {
        History::new(
            noise
                .iter()
                .map(|n| {
                    Step::call(
                        shape.tool(0),
                        json!({"path": "config.yaml", "pad": shape.pad()}),
                        format!("read at 2026-11-22T10:{:02}:{:02} in {n} ms: key not found", n % 60, n % 59),
                    )
                })
                .collect(),
        )
    })
}

/// A cycle of `period` (2–5) distinct calls repeated `repeats` times, outputs unchanged.
pub fn cycles(
    shape: &Shape,
    period: Range<usize>,
    repeats: Range<usize>,
) -> impl Strategy<Value = History> + use<> {
    let shape = shape.clone();
    (period, repeats).prop_map(move |(period, repeats)| {
        let period = period.clamp(2, 5);
        let mut steps = Vec::new();
        for _ in 0..repeats {
            for k in 0..period {
                steps.push(Step::call(
                    shape.tool(k),
                    json!({"target": word(k), "pad": shape.pad()}),
                    format!("nothing new in {}", word(k)),
                ));
            }
        }
        History::new(steps)
    })
}

/// An error streak: different calls, each failing differently.
pub fn error_streak(shape: &Shape, len: Range<usize>) -> impl Strategy<Value = History> + use<> {
    let shape = shape.clone();
    prop::collection::vec(0usize..1000, len).prop_map(move |salts| {
        History::new(
            salts
                .iter()
                .enumerate()
                .map(|(i, salt)| {
                    Step::error(
                        &shape.run_tool,
                        json!({"command": format!("make {}", word(i * 1000 + salt))}),
                        format!("Error: target {} failed", word(*salt + i)),
                    )
                })
                .collect(),
        )
    })
}

/// `inner` with user turns inserted at random places.
pub fn with_user_turns(inner: impl Strategy<Value = History>) -> impl Strategy<Value = History> {
    (inner, prop::collection::vec(any::<prop::sample::Index>(), 0..3)).prop_map(|(mut history, at)| {
        for index in at {
            let position = index.index(history.steps.len() + 1);
            history.steps.insert(position, Step::UserTurn);
        }
        history
    })
}

/// Any of the histories above (with user turns), for checks that hold everywhere.
pub fn any_history(shape: &Shape) -> impl Strategy<Value = History> + use<> {
    prop_oneof![
        novel_exploration(shape, 1..30),
        edit_test_cycles(shape, 1..10),
        polling(shape, 1..20),
        identical_loop(shape, 1..20),
        cycles(shape, 2..6, 1..6),
        error_streak(shape, 1..15),
    ]
    .prop_flat_map(|h| with_user_turns(Just(h)))
}
