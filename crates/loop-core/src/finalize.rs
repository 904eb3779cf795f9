//! Output finalisation (F13): output checks, structured output and citations run once, after
//! the loop has ended. A rejected output is returned marked [`Moderation`] with its original
//! content and the rule that rejected it; it never re-enters the loop.
//!
//! ```
//! use looprail_loop_core::finalize::{DenySubstrings, Finalizer, JsonOutput};
//! use looprail_loop_core::outcome::{Outcome, StopCause};
//! use looprail_loop_core::state::RunState;
//!
//! let finalizer = Finalizer::new().check(DenySubstrings::new("no-secrets", ["BEGIN PRIVATE KEY"])).format(JsonOutput);
//! let mut outcome = Outcome::finished("```json\n{\"answer\": 4}\n```");
//! finalizer.finalize(&mut outcome);
//! assert_eq!(outcome.moderated, None);
//! assert_eq!(outcome.structured.unwrap().value().unwrap()["answer"], 4);
//! ```

use std::sync::Arc;

use crate::outcome::Outcome;
pub use crate::outcome::{Citation, Moderation, StructuredOutput};
use crate::state::RunState;

/// An output check's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputVerdict {
    /// The output may go out.
    Pass,
    /// The output is rejected for this reason.
    Reject(String),
}

/// A check on the final text (moderation, PII, grounding...).
pub trait OutputCheck: Send + Sync {
    /// The rule's name, reported when it rejects.
    fn name(&self) -> &str;
    /// Judges the final text.
    fn check(&self, text: &str) -> OutputVerdict;
}

/// Turns the final text into structured output.
pub trait OutputFormatter: Send + Sync {
    /// The structured value, or why the text does not fit.
    fn format(&self, text: &str) -> Result<serde_json::Value, String>;
}

/// Builds citations for the final text (the RAG dedup map is one).
pub trait CitationSource: Send + Sync {
    /// Citations for the markers found in `text`; only for chunks the model was shown.
    fn citations(&self, text: &str) -> Vec<Citation>;
}

/// Runs the post-loop steps once over an outcome.
#[derive(Clone, Default)]
pub struct Finalizer {
    checks: Vec<Arc<dyn OutputCheck>>,
    formatter: Option<Arc<dyn OutputFormatter>>,
    citations: Vec<Arc<dyn CitationSource>>,
}

impl std::fmt::Debug for Finalizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finalizer")
            .field("checks", &self.checks.iter().map(|c| c.name().to_owned()).collect::<Vec<_>>())
            .field("formatter", &self.formatter.is_some())
            .field("citation_sources", &self.citations.len())
            .finish()
    }
}

impl Finalizer {
    /// A finalizer that does nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an output check; checks run in order and the first rejection wins.
    #[must_use]
    pub fn check(mut self, check: impl OutputCheck + 'static) -> Self {
        self.checks.push(Arc::new(check));
        self
    }

    /// Sets the structured-output formatter.
    #[must_use]
    pub fn format(mut self, formatter: impl OutputFormatter + 'static) -> Self {
        self.formatter = Some(Arc::new(formatter));
        self
    }

    /// Adds a citation source.
    #[must_use]
    pub fn citations(mut self, source: Arc<dyn CitationSource>) -> Self {
        self.citations.push(source);
        self
    }

    /// Finalises `outcome` in place. Cancelled runs and runs waiting on a human have no final
    /// output and are left alone. A rejection keeps the original text and marks it moderated;
    /// a moderated output is not formatted. Citations are built either way.
    pub fn finalize(&self, outcome: &mut Outcome) {
        if matches!(outcome.state, RunState::Cancelled | RunState::WaitingOnHuman | RunState::WaitingForInput)
        {
            return;
        }
        for check in &self.checks {
            if let OutputVerdict::Reject(reason) = check.check(&outcome.final_text) {
                outcome.moderated = Some(Moderation { rule: check.name().to_owned(), reason });
                break;
            }
        }
        if outcome.moderated.is_none()
            && let Some(formatter) = &self.formatter
        {
            outcome.structured = Some(match formatter.format(&outcome.final_text) {
                Ok(value) => StructuredOutput::Parsed { value },
                Err(error) => StructuredOutput::Invalid { error },
            });
        }
        outcome.citations = self.citations.iter().flat_map(|s| s.citations(&outcome.final_text)).collect();
    }
}

/// Rejects text containing any of the given substrings (case-insensitive).
#[derive(Debug, Clone)]
pub struct DenySubstrings {
    name: String,
    needles: Vec<String>,
}

impl DenySubstrings {
    /// A rule called `name` rejecting any of `needles`.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(name: impl Into<String>, needles: I) -> Self {
        Self { name: name.into(), needles: needles.into_iter().map(|n| n.into().to_lowercase()).collect() }
    }
}

impl OutputCheck for DenySubstrings {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, text: &str) -> OutputVerdict {
        let lower = text.to_lowercase();
        match self.needles.iter().find(|n| lower.contains(n.as_str())) {
            Some(needle) => OutputVerdict::Reject(format!("the output contains `{needle}`")),
            None => OutputVerdict::Pass,
        }
    }
}

/// Parses the final text as JSON, accepting a fenced ```json block around it.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonOutput;

impl OutputFormatter for JsonOutput {
    fn format(&self, text: &str) -> Result<serde_json::Value, String> {
        let trimmed = text.trim();
        let body = trimmed
            .strip_prefix("```json")
            .or_else(|| trimmed.strip_prefix("```"))
            .and_then(|rest| rest.trim_end().strip_suffix("```"))
            .unwrap_or(trimmed);
        serde_json::from_str(body.trim()).map_err(|e| format!("the answer is not valid JSON: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejected_output_keeps_its_text_and_names_the_rule() {
        let finalizer = Finalizer::new().check(DenySubstrings::new("no-pii", ["SSN"])).format(JsonOutput);
        let mut outcome = Outcome::finished("Your ssn is 123");
        finalizer.finalize(&mut outcome);
        let moderation = outcome.moderated.unwrap();
        assert_eq!(moderation.rule, "no-pii");
        assert_eq!(outcome.final_text, "Your ssn is 123");
        assert_eq!(outcome.structured, None, "a moderated output is not formatted");
    }

    #[test]
    fn invalid_structured_output_is_reported_not_fatal() {
        let mut outcome = Outcome::finished("not json");
        Finalizer::new().format(JsonOutput).finalize(&mut outcome);
        assert!(matches!(outcome.structured, Some(StructuredOutput::Invalid { .. })));
    }

    #[test]
    fn cancelled_runs_are_not_finalised() {
        let mut outcome = Outcome::finished("x");
        outcome.state = RunState::Cancelled;
        Finalizer::new().check(DenySubstrings::new("all", ["x"])).finalize(&mut outcome);
        assert_eq!(outcome.moderated, None);
    }
}
