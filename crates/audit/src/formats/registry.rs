//! Every format the audit reads as a [`LogFormat`], in the order they are tried: agents'
//! JSONL first (each line typed), then trajectories (files naming `trajectory` or `history`),
//! then chat logs, then the documents of benchmarks and frameworks.

use serde_json::Value;

use super::log::Log;
use super::{
    FileRuns, FoundRun, claude_code, codex, codex_exec, gemini_api, gemini_cli, langchain, mini_swe_agent,
    openhands, read_chat, swe_agent, tau_bench, vercel_ai,
};
use looprail::core::transcript::read_log;

/// One log format: knows its own files, and reads their runs.
pub trait LogFormat: Sync {
    /// Its name, as reports show it.
    fn name(&self) -> &'static str;

    /// The runs in `log`, or `None` when the log is not in this format.
    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>>;
}

/// The formats, in the order they are tried.
pub static FORMATS: &[&dyn LogFormat] = &[
    &CodexExec,
    &CodexRollout,
    &ClaudeCode,
    &MiniSweAgent,
    &SweAgent,
    &OpenHands,
    &Chat,
    &TauBench,
    &GeminiApi,
    &GeminiCli,
    &LangChain,
    &VercelAi,
    &ResponsesItems,
];

/// The log's JSONL lines when it is an agent's JSONL (see [`Log::is_agent_jsonl`]).
fn agent_lines<'l>(log: &'l Log<'_>) -> Option<&'l [Value]> {
    log.is_agent_jsonl(codex::is_legacy_meta).then(|| log.lines().values.as_slice())
}

/// Runs read from the log's JSONL lines, with the lines that were not JSON named.
fn from_lines(log: &Log<'_>, runs: FileRuns) -> FileRuns {
    FileRuns { skipped_lines: log.lines().skipped.clone(), ..runs }
}

/// `codex exec --json` event streams.
struct CodexExec;

impl LogFormat for CodexExec {
    fn name(&self) -> &'static str {
        "codex-exec"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        let lines = agent_lines(log).filter(|lines| codex_exec::detect(lines))?;
        Some(Ok(from_lines(log, FileRuns::one(codex_exec::messages(lines)))))
    }
}

/// Codex CLI session rollouts.
struct CodexRollout;

impl LogFormat for CodexRollout {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        let lines = agent_lines(log).filter(|lines| codex::detect(lines))?;
        Some(codex::read(lines).map(|(messages, replies)| {
            let mut run = FoundRun::new(None, messages).with_replies(replies);
            run.logged_peak = codex::logged_peak(lines);
            from_lines(log, FileRuns::single(run))
        }))
    }
}

/// Claude Code session logs and its stream-json output, each sub-agent a run of its own.
struct ClaudeCode;

impl LogFormat for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        let lines = agent_lines(log).filter(|lines| claude_code::detect(lines))?;
        let mut found = claude_code::conversations(lines);
        // A sub-agent's own file (Claude Code 2.1.2+ writes `<session>/subagents/agent-<id>.jsonl`,
        // every line a sidechain): one run, the file's.
        if let [only] = found.as_mut_slice() {
            only.key = None;
        }
        let conversations = found.into_iter().map(|conversation| {
            let key = conversation.key;
            let name = key.as_deref().map_or_else(|| "the main conversation".to_owned(), |k| format!("#{k}"));
            let messages = read_chat(conversation.messages).map_err(|e| format!("{name}: {e}"))?;
            let run = FoundRun { logged_peak: conversation.logged_peak, ..FoundRun::new(key, messages) };
            Ok(run.with_replies(conversation.replies))
        });
        Some(FileRuns::each(conversations).map(|runs| from_lines(log, runs)))
    }
}

/// The log's one document, when it names a trajectory's keys.
fn trajectory<'l>(log: &'l Log<'_>) -> Option<&'l Value> {
    log.names_agent_keys().then(|| log.document()).flatten()
}

/// mini-swe-agent trajectories.
struct MiniSweAgent;

impl LogFormat for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        let doc = trajectory(log).filter(|doc| mini_swe_agent::detect(doc))?;
        Some(mini_swe_agent::read(doc).map(FileRuns::one))
    }
}

/// SWE-agent `.traj` files; one with several attempts is a run for each.
struct SweAgent;

impl LogFormat for SweAgent {
    fn name(&self) -> &'static str {
        "swe-agent"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        let doc = trajectory(log)?;
        if let Some(attempts) = swe_agent::attempts(doc) {
            // Every attempt is a run, named by its index as SWE-agent numbers them
            // (`info.best_attempt_idx`); the top level's copy of the chosen one is not another.
            return Some(FileRuns::each(attempts.iter().enumerate().map(|(i, attempt)| {
                let id = format!("attempt-{i}");
                swe_agent::read(attempt)
                    .map(|m| FoundRun::new(Some(id.clone()), m))
                    .map_err(|e| format!("{id}: {e}"))
            })));
        }
        swe_agent::detect(doc).then(|| swe_agent::read(doc).map(FileRuns::one))
    }
}

/// OpenHands histories: one run, or an evaluation's `output.jsonl` with one run per line.
struct OpenHands;

impl LogFormat for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        if !log.names_agent_keys() {
            return None;
        }
        if let Some(doc) = log.document() {
            // One line of an `output.jsonl` is still named by its instance.
            let id = if log.trimmed().contains('\n') { None } else { openhands::run_id(doc) };
            return openhands::detect(doc)
                .then(|| openhands::read(doc).map(|m| FileRuns::single(FoundRun::new(id, m))));
        }
        let lines = log.lines();
        if !lines.values.first().is_some_and(openhands::detect) {
            return None;
        }
        // A run that cannot be read (an evaluation's crashed instance, with an empty history) is
        // left out and said; the others are audited.
        let runs = FileRuns::each(lines.values.iter().zip(&lines.numbers).map(|(run, line)| {
            let id = openhands::run_id(run).unwrap_or_else(|| format!("line-{line}"));
            let messages = openhands::read(run).map_err(|e| format!("run {id} (line {line}): {e}"))?;
            Ok(FoundRun::new(Some(id), messages))
        }));
        Some(runs.map(|runs| from_lines(log, runs)))
    }
}

/// OpenAI chat and Anthropic Messages logs (documents, arrays, JSONL), and the Vercel AI SDK's
/// messages when a chat log's reading finds no call (its calls are `parts`).
struct Chat;

impl LogFormat for Chat {
    fn name(&self) -> &'static str {
        "chat"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        match read_log(log.text()) {
            Ok((_, messages)) if messages.iter().all(|m| m.tool_calls().next().is_none()) => {
                Some(match log.document().and_then(vercel_ai::messages) {
                    Some(list) => vercel_ai::read(list).map(FileRuns::one),
                    None => Ok(FileRuns::one(messages)),
                })
            }
            Ok((_, messages)) => Some(Ok(FileRuns::one(messages))),
            Err(e) => {
                log.set_chat_error(e.to_string());
                None
            }
        }
    }
}

/// τ-bench and τ²-bench results files, a run per task and trial.
struct TauBench;

impl LogFormat for TauBench {
    fn name(&self) -> &'static str {
        "tau-bench"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        tau_bench::runs(log.document()?)
    }
}

/// The Gemini API's `contents`.
struct GeminiApi;

impl LogFormat for GeminiApi {
    fn name(&self) -> &'static str {
        "gemini-api"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        let (contents, system) = gemini_api::contents(log.document()?)?;
        Some(Ok(FileRuns::one(gemini_api::read(contents, system))))
    }
}

/// Gemini CLI sessions: a document with `messages`, or JSONL whose first line is the session's.
struct GeminiCli;

impl LogFormat for GeminiCli {
    fn name(&self) -> &'static str {
        "gemini-cli"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        if let Some(doc) = log.document() {
            let messages =
                doc.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            return gemini_cli::detect_document(doc).then(|| gemini_cli::read(messages).map(FileRuns::one));
        }
        let lines = &log.lines().values;
        gemini_cli::detect_lines(lines)
            .then(|| gemini_cli::read(&lines[1..]).map(|runs| from_lines(log, FileRuns::one(runs))))
    }
}

/// LangChain and LangGraph messages.
struct LangChain;

impl LogFormat for LangChain {
    fn name(&self) -> &'static str {
        "langchain"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        langchain::messages(log.document()?).map(|list| langchain::read(list).map(FileRuns::one))
    }
}

/// The Vercel AI SDK's UI and model messages.
struct VercelAi;

impl LogFormat for VercelAi {
    fn name(&self) -> &'static str {
        "vercel-ai"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        vercel_ai::messages(log.document()?).map(|list| vercel_ai::read(list).map(FileRuns::one))
    }
}

/// Responses API items in one array (the OpenAI Agents SDK's `to_input_list()`), as a Codex
/// rollout holds them.
struct ResponsesItems;

impl LogFormat for ResponsesItems {
    fn name(&self) -> &'static str {
        "responses-items"
    }

    fn read(&self, log: &Log<'_>) -> Option<Result<FileRuns, String>> {
        let items = log.document()?.as_array().filter(|items| codex::detect(items))?;
        Some(codex::messages(items).map(FileRuns::one))
    }
}
