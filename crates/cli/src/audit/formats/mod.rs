//! The recorded-run formats the audit reads, detected from the content: OpenAI chat and
//! Anthropic Messages logs (documents, arrays, JSONL), SWE-agent `.traj` files and OpenHands
//! event histories (one run, or an evaluation `output.jsonl` with one run per line).

mod openhands;
mod swe_agent;

use looprail::core::message::Message;
use looprail::core::transcript::read_log;
use serde_json::Value;

/// One run found in a file: its name suffix (`#<id>` for files holding several) and messages.
pub type FoundRun = (Option<String>, Vec<Message>);

const EXPECTED: &str = "expected an OpenAI chat or Anthropic Messages log (a `messages` document, an array or \
JSONL of messages), a SWE-agent .traj (`trajectory` and `history`) or an OpenHands history (`history` of \
events; output.jsonl with one run per line)";

/// Every run in `text`, or why none could be read.
pub fn read_runs(text: &str) -> Result<Vec<FoundRun>, String> {
    let trimmed = text.trim();
    // Only a file naming these keys can be a SWE-agent or OpenHands log: the common case, a
    // chat log, is parsed once, by the transcript reader.
    if !(trimmed.contains("\"trajectory\"") || trimmed.contains("\"history\"")) {
        return read_log(text)
            .map(|(_, messages)| vec![(None, messages)])
            .map_err(|e| format!("{e}; {EXPECTED}"));
    }
    if let Ok(doc) = serde_json::from_str::<Value>(trimmed) {
        if swe_agent::detect(&doc) {
            return Ok(vec![(None, swe_agent::read(&doc)?)]);
        }
        if openhands::detect(&doc) {
            return Ok(vec![(None, openhands::read(&doc)?)]);
        }
    } else if let Some(runs) = openhands_lines(trimmed)? {
        return Ok(runs);
    }
    match read_log(text) {
        Ok((_, messages)) => Ok(vec![(None, messages)]),
        Err(e) => Err(format!("{e}; {EXPECTED}")),
    }
}

/// JSONL whose lines are OpenHands runs (`None` when the first line is not one).
fn openhands_lines(text: &str) -> Result<Option<Vec<FoundRun>>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).enumerate().peekable();
    let Some((_, first)) = lines.peek() else { return Ok(None) };
    let Ok(first) = serde_json::from_str::<Value>(first) else { return Ok(None) };
    if !openhands::detect(&first) {
        return Ok(None);
    }
    let mut runs = Vec::new();
    for (index, line) in lines {
        let run: Value =
            serde_json::from_str(line).map_err(|e| format!("line {} is not JSON: {e}", index + 1))?;
        let id = openhands::run_id(&run).unwrap_or_else(|| format!("line-{}", index + 1));
        let messages = openhands::read(&run).map_err(|e| format!("run {id} (line {}): {e}", index + 1))?;
        runs.push((Some(id), messages));
    }
    Ok(Some(runs))
}
