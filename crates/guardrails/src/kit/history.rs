//! [`History`]: what an agent did, as the guards see it — tool calls with their observations,
//! and user turns in between.

use std::fmt;

/// One step of a history.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A tool call and what it returned.
    Call {
        /// The tool.
        tool: String,
        /// Its arguments, as the model sent them (JSON text).
        arguments: String,
        /// What it returned.
        output: String,
        /// Whether it failed.
        is_error: bool,
    },
    /// The user said something: a new user turn starts.
    UserTurn,
}

impl Step {
    /// A successful call.
    pub fn call(tool: &str, arguments: serde_json::Value, output: impl Into<String>) -> Self {
        Step::Call {
            tool: tool.to_owned(),
            arguments: arguments.to_string(),
            output: output.into(),
            is_error: false,
        }
    }

    /// A failed call.
    pub fn error(tool: &str, arguments: serde_json::Value, output: impl Into<String>) -> Self {
        Step::Call {
            tool: tool.to_owned(),
            arguments: arguments.to_string(),
            output: output.into(),
            is_error: true,
        }
    }
}

/// A sequence of steps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct History {
    /// The steps, in order.
    pub steps: Vec<Step>,
}

impl History {
    /// A history of these steps.
    pub fn new(steps: Vec<Step>) -> Self {
        Self { steps }
    }

    /// The number of tool calls.
    pub fn calls(&self) -> usize {
        self.steps.iter().filter(|s| matches!(s, Step::Call { .. })).count()
    }
}

fn cut(text: &str, max: usize) -> String {
    let line = text.replace('\n', "⏎");
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

impl fmt::Display for History {
    /// One line per step: `#3 bash {"command":"pytest"} -> FAILED (2 tests)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut call = 0;
        for step in &self.steps {
            match step {
                Step::Call { tool, arguments, output, is_error } => {
                    let mark = if *is_error { " (error)" } else { "" };
                    writeln!(f, "  #{call} {tool} {} -> {}{mark}", cut(arguments, 80), cut(output, 60))?;
                    call += 1;
                }
                Step::UserTurn => writeln!(f, "  -- user turn --")?,
            }
        }
        Ok(())
    }
}
