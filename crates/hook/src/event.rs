//! One hook event, whatever agent sent it, and the answer to it.

/// A tool call as a hook sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    /// The tool's name (`Bash`, `run_shell_command`, `mcp__server__tool`...).
    pub tool: String,
    /// Its arguments as JSON text.
    pub arguments: String,
    /// The agent's id for the call, when it gives one.
    pub id: Option<String>,
}

/// What a tool call gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The output as the model reads it.
    pub text: String,
    /// The agent says the call failed.
    pub failed: bool,
}

/// What happened in the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A session began (or was resumed or cleared).
    SessionStart,
    /// The user sent a prompt: a new autonomous stretch begins.
    UserPrompt,
    /// A tool call is about to run.
    BeforeTool(ToolUse),
    /// A tool call ran.
    AfterTool(ToolUse, ToolOutput),
    /// The agent finished its reply.
    Stop,
    /// The session ended.
    SessionEnd,
    /// An event looprail does not act on.
    Other(String),
}

/// One hook event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    /// The agent's session id.
    pub session: String,
    /// What happened.
    pub kind: EventKind,
}

/// What looprail answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Nothing to say: the agent goes on as it would.
    Allow,
    /// A message the model reads with the tool's result (a nudge or a directive).
    Tell(String),
    /// The call does not run; the model reads why.
    Deny(String),
    /// The user decides whether the call runs (the agent's own permission prompt), told why.
    Ask(String),
    /// The agent stops; the user reads why.
    Stop(String),
}
