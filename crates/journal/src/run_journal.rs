//! The run journal (F35): durable working memory the model edits with three tools, injected as
//! a ~500-character digest in the system prompt and as a full user/assistant pair.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use looprail_loop_core::guard::{Decision, Guard, GuardStateError, TurnView};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::store::CheckpointKind;
use looprail_loop_core::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The journal's sections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunJournal {
    /// The task, in the model's words.
    pub objective: String,
    /// Where the work is now.
    pub current_state: String,
    /// Things confirmed.
    pub verified_findings: Vec<String>,
    /// Choices made, with their reasons.
    pub decisions: Vec<String>,
    /// Deliverables produced (paths, ids).
    pub artifacts: Vec<String>,
    /// Unresolved questions.
    pub open_questions: Vec<String>,
    /// What stops progress.
    pub blockers: Vec<String>,
    /// What should happen next if the run stops here.
    pub handoff_next_action: String,
}

/// Characters of the digest.
pub const DIGEST_CHARS: usize = 500;

const LIST_SECTIONS: [&str; 5] =
    ["verified_findings", "decisions", "artifacts", "open_questions", "blockers"];

impl RunJournal {
    fn list_mut(&mut self, section: &str) -> Option<&mut Vec<String>> {
        Some(match section {
            "verified_findings" => &mut self.verified_findings,
            "decisions" => &mut self.decisions,
            "artifacts" => &mut self.artifacts,
            "open_questions" => &mut self.open_questions,
            "blockers" => &mut self.blockers,
            _ => return None,
        })
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        *self == RunJournal::default()
    }

    /// The compact digest for the system prompt: objective, current state, first blocker, next
    /// action and the latest findings, at most [`DIGEST_CHARS`] characters.
    pub fn digest(&self) -> String {
        let mut parts = Vec::new();
        if !self.objective.is_empty() {
            parts.push(format!("Objective: {}", self.objective));
        }
        if !self.current_state.is_empty() {
            parts.push(format!("State: {}", self.current_state));
        }
        if let Some(blocker) = self.blockers.first() {
            parts.push(format!("Blocker: {blocker}"));
        }
        if !self.handoff_next_action.is_empty() {
            parts.push(format!("Next: {}", self.handoff_next_action));
        }
        let recent: Vec<&str> = self.verified_findings.iter().rev().take(3).map(String::as_str).collect();
        if !recent.is_empty() {
            parts.push(format!("Recent findings: {}", recent.join("; ")));
        }
        let text = format!("Run journal: {}", parts.join(" | "));
        match text.char_indices().nth(DIGEST_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    }

    /// The full journal as Markdown.
    pub fn render(&self) -> String {
        let mut out = String::from("# Run journal\n");
        out.push_str(&format!(
            "\n## Objective\n{}\n",
            if self.objective.is_empty() { "(none)" } else { &self.objective }
        ));
        out.push_str(&format!(
            "\n## Current state\n{}\n",
            if self.current_state.is_empty() { "(none)" } else { &self.current_state }
        ));
        for (title, items) in [
            ("Verified findings", &self.verified_findings),
            ("Decisions", &self.decisions),
            ("Artifacts", &self.artifacts),
            ("Open questions", &self.open_questions),
            ("Blockers", &self.blockers),
        ] {
            out.push_str(&format!("\n## {title}\n"));
            if items.is_empty() {
                out.push_str("(none)\n");
            }
            for item in items {
                out.push_str(&format!("- {item}\n"));
            }
        }
        out.push_str(&format!(
            "\n## Next action\n{}\n",
            if self.handoff_next_action.is_empty() { "(none)" } else { &self.handoff_next_action }
        ));
        out
    }

    /// The full journal as the user/assistant pair placed after any history summary (tagged
    /// `run_journal`, so compaction keeps it).
    pub fn messages(&self) -> [Message; 2] {
        [
            Message::internal_user("run_journal", self.render()),
            Message::assistant("Noted: I will continue from this journal.").tagged("run_journal_ack"),
        ]
    }

    /// `base` with the digest appended (for a continuation's system prompt).
    pub fn system_prompt(&self, base: &str) -> String {
        if self.is_empty() { base.to_owned() } else { format!("{base}\n\n{}", self.digest()) }
    }
}

/// The journal shared by the tools and the state guard of one run.
#[derive(Debug, Clone, Default)]
pub struct JournalHandle(Arc<Mutex<RunJournal>>);

impl JournalHandle {
    /// A handle on `journal`.
    pub fn new(journal: RunJournal) -> Self {
        Self(Arc::new(Mutex::new(journal)))
    }

    fn lock(&self) -> MutexGuard<'_, RunJournal> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the journal.
    pub fn snapshot(&self) -> RunJournal {
        self.lock().clone()
    }

    /// The three tools and the guard that saves the journal with the run.
    pub fn tools(&self) -> (GetRunJournal, UpdateRunJournal, AppendRunJournalEntry) {
        (GetRunJournal(self.clone()), UpdateRunJournal(self.clone()), AppendRunJournalEntry(self.clone()))
    }

    /// The guard that saves the journal with the run and checkpoints after each update.
    pub fn guard(&self) -> JournalState {
        JournalState(self.clone())
    }
}

/// `get_run_journal`: returns the journal.
#[derive(Debug, Clone)]
pub struct GetRunJournal(JournalHandle);

/// `update_run_journal`: sets top-level fields.
#[derive(Debug, Clone)]
pub struct UpdateRunJournal(JournalHandle);

/// `append_run_journal_entry`: adds an entry to a list section.
#[derive(Debug, Clone)]
pub struct AppendRunJournalEntry(JournalHandle);

#[async_trait]
impl Tool for GetRunJournal {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "get_run_journal",
            "Read your run journal (your durable working notes).",
            json!({"type": "object", "properties": {}}),
        )
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, _args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(self.0.lock().render().into())
    }
}

#[async_trait]
impl Tool for UpdateRunJournal {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "update_run_journal",
            "Set the objective, current state or next action of your run journal.",
            json!({"type": "object", "properties": {
                "objective": {"type": "string"}, "current_state": {"type": "string"}, "handoff_next_action": {"type": "string"}}}),
        )
    }
    fn idempotent(&self) -> bool {
        true // setting fields to the same values twice changes nothing
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let field = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        let (objective, state, next) =
            (field("objective"), field("current_state"), field("handoff_next_action"));
        if objective.is_none() && state.is_none() && next.is_none() {
            return Err(ToolError::invalid_arguments(
                "give at least one of objective, current_state, handoff_next_action",
            ));
        }
        let mut journal = self.0.lock();
        if let Some(v) = objective {
            journal.objective = v;
        }
        if let Some(v) = state {
            journal.current_state = v;
        }
        if let Some(v) = next {
            journal.handoff_next_action = v;
        }
        Ok("journal updated".into())
    }
}

#[async_trait]
impl Tool for AppendRunJournalEntry {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "append_run_journal_entry",
            "Add an entry to a list section of your run journal.",
            json!({"type": "object", "required": ["section", "entry"], "properties": {
                "section": {"type": "string", "enum": LIST_SECTIONS}, "entry": {"type": "string"}}}),
        )
    }
    async fn call(&self, args: Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let section = args.get("section").and_then(Value::as_str).unwrap_or_default();
        let entry = args.get("entry").and_then(Value::as_str).filter(|e| !e.trim().is_empty());
        let Some(entry) = entry else {
            return Err(ToolError::invalid_arguments("`entry` must be a non-empty string"));
        };
        let mut journal = self.0.lock();
        let Some(list) = journal.list_mut(section) else {
            return Err(ToolError::invalid_arguments(format!(
                "unknown section `{section}`; use one of {}",
                LIST_SECTIONS.join(", ")
            )));
        };
        list.push(entry.to_owned());
        Ok(format!("added to {section}").into())
    }
}

/// Saves the journal in the run's checkpoints and asks for a `journal_update` checkpoint after
/// each successful journal write.
#[derive(Debug, Clone)]
pub struct JournalState(JournalHandle);

impl Guard for JournalState {
    fn name(&self) -> &str {
        "run_journal"
    }

    fn after_tools(
        &mut self,
        _view: &TurnView<'_>,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Decision> {
        let wrote = calls.iter().zip(results).any(|(c, r)| {
            !r.is_error && matches!(c.name.as_str(), "update_run_journal" | "append_run_journal_entry")
        });
        if wrote { vec![Decision::Checkpoint(CheckpointKind::JournalUpdate)] } else { Vec::new() }
    }

    /// The full journal as it is now, placed after each history summary (in place of the
    /// pair the run started with).
    fn after_summary(&self) -> Vec<Message> {
        let journal = self.0.snapshot();
        if journal.is_empty() { Vec::new() } else { journal.messages().to_vec() }
    }

    fn save_state(&self) -> Value {
        serde_json::to_value(self.0.snapshot()).unwrap_or_default()
    }

    fn load_state(&mut self, state: Value) -> Result<(), GuardStateError> {
        if state.is_null() {
            return Ok(());
        }
        *self.0.lock() =
            serde_json::from_value(state).map_err(|e| GuardStateError::from_serde("run_journal", e))?;
        Ok(())
    }
}
