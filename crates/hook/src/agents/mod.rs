//! The agents whose hooks looprail speaks: each reads its events and writes its answers.

pub mod claude_code;
pub mod codex;
pub mod copilot;
pub mod gemini_cli;

use serde_json::Value;

use crate::HookError;
use crate::event::{Answer, EventKind, HookEvent, ToolUse};

/// An agent that runs hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// Google's Gemini CLI.
    GeminiCli,
    /// Alibaba's Qwen Code, whose hooks speak Claude Code's events and answers.
    QwenCode,
    /// OpenAI's Codex CLI, whose hooks speak Claude Code's events with answers of its own.
    Codex,
    /// GitHub Copilot CLI.
    Copilot,
}

impl Agent {
    /// Every agent.
    pub const ALL: [Agent; 5] =
        [Agent::ClaudeCode, Agent::Codex, Agent::Copilot, Agent::GeminiCli, Agent::QwenCode];

    /// Its name on the command line (`claude-code`, `codex`, `copilot`, `gemini-cli`,
    /// `qwen-code`).
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::GeminiCli => "gemini-cli",
            Agent::QwenCode => "qwen-code",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
        }
    }

    /// Its name for people (`Claude Code`, `GitHub Copilot CLI`…).
    pub fn title(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::GeminiCli => "Gemini CLI",
            Agent::QwenCode => "Qwen Code",
            Agent::Codex => "Codex CLI",
            Agent::Copilot => "GitHub Copilot CLI",
        }
    }

    /// The environment variable naming the agent's own configuration directory, when it has
    /// one (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `COPILOT_HOME`): its user settings live there
    /// instead of under the home directory.
    pub fn home_variable(self) -> Option<&'static str> {
        match self {
            Agent::ClaudeCode => Some("CLAUDE_CONFIG_DIR"),
            Agent::Codex => Some("CODEX_HOME"),
            Agent::Copilot => Some("COPILOT_HOME"),
            Agent::GeminiCli | Agent::QwenCode => None,
        }
    }

    /// The names of every agent, for messages (`claude-code, codex, … or qwen-code`).
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|a| a.name()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    /// The agent of that name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Reads one event.
    pub fn parse(self, input: &[u8]) -> Result<HookEvent, HookError> {
        match self {
            Agent::ClaudeCode => claude_code::parse(input),
            Agent::GeminiCli => gemini_cli::parse(input),
            Agent::QwenCode | Agent::Codex => claude_code::parse(input),
            Agent::Copilot => copilot::parse(input),
        }
    }

    /// What to print on stdout for `answer` to an event of `kind` (empty: nothing).
    pub fn render(self, kind: &EventKind, answer: &Answer) -> String {
        let value = match self {
            Agent::ClaudeCode => claude_code::render(kind, answer),
            Agent::QwenCode => qwen_render(kind, answer),
            // Gemini CLI reads `{}` as nothing to say.
            Agent::GeminiCli => Some(gemini_cli::render(kind, answer)),
            Agent::Codex => codex::render(kind, answer),
            Agent::Copilot => copilot::render(kind, answer),
        };
        value.map(|v| v.to_string()).unwrap_or_default()
    }
}

/// What the model is told to do once the stretch is stopped: no tool runs any more, so the
/// useful move left is an answer.
const END_TURN: &str = "No further tool call will run in this turn: end your turn now, \
     telling the user what you tried, what happened and what is blocking you.";

/// A stop's `reason` as the model reads it where the agent's hooks cannot end its turn (Codex,
/// Copilot CLI, a headless Qwen Code): every further call is refused, and it is told to answer.
pub(crate) fn stopped(reason: &str) -> String {
    format!("{reason} {END_TURN}")
}

/// Qwen Code's answers: Claude Code's, but a headless Qwen Code goes on after `continue: false`
/// (it only denies the call), so a stop also tells the model, beside the call's result or in
/// the denial, that no call will run any more and to end its turn.
fn qwen_render(kind: &EventKind, answer: &Answer) -> Option<Value> {
    let mut value = claude_code::render(kind, answer)?;
    if let Answer::Stop(reason) = answer {
        let told = stopped(reason);
        if matches!(kind, EventKind::BeforeTool(_)) {
            value["hookSpecificOutput"]["permissionDecisionReason"] = Value::String(told);
        } else if matches!(kind, EventKind::AfterTool(..)) {
            value["decision"] = Value::String("block".to_owned());
            value["reason"] = Value::String(told);
        }
    }
    Some(value)
}

/// The call of a tool event: Claude Code, Qwen Code, Codex and Gemini CLI name the tool `tool_name` and its input `tool_input`
/// (a call without input reads as `{}`); `id` is the agent's own id for the call, if it gives one.
pub(crate) fn tool_use(event: &Value, id: Option<String>) -> Result<ToolUse, HookError> {
    Ok(ToolUse {
        tool: field(event, "tool_name")?.to_owned(),
        arguments: event.get("tool_input").map_or_else(|| "{}".to_owned(), Value::to_string),
        id,
    })
}

/// A required string field of an event.
pub(crate) fn field<'a>(event: &'a Value, key: &'static str) -> Result<&'a str, HookError> {
    event.get(key).and_then(Value::as_str).ok_or(HookError::MissingField(key))
}

/// The output of a call as the model reads it, from a tool's `response`: Gemini CLI's and Qwen
/// Code's `llmContent` (without the line echoing the shell command, which says nothing new:
/// two runs of different commands with the same output are the same result), else
/// [`text_of`] the whole.
pub(crate) fn output_text(response: &Value, arguments: &str) -> String {
    let Some(content) = response.get("llmContent") else { return text_of(response) };
    let Some(content) = content.as_str() else { return text_of(content) };
    let input: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let Some(command) = input.get("command").and_then(Value::as_str) else { return content.to_owned() };
    let echo = format!("Command: {command}");
    if !content.contains(&echo) {
        return content.to_owned();
    }
    content.lines().filter(|line| *line != echo).collect::<Vec<_>>().join("\n")
}

/// A tool's output as the model reads it: a string as it is; a shell's `stdout` and `stderr`;
/// anything else as compact JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        Value::Object(fields) if fields.contains_key("stdout") || fields.contains_key("stderr") => {
            let part = |k: &str| fields.get(k).and_then(Value::as_str).unwrap_or_default();
            let (out, err) = (part("stdout"), part("stderr"));
            if err.is_empty() { out.to_owned() } else { format!("{out}\n{err}") }
        }
        other => other.to_string(),
    }
}
