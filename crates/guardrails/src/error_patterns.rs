//! Which logged tool results are errors: real logs carry no flag, so a result is read for the
//! marks of failure (a leading `Error`, a `Traceback`, `No such file or directory`...).

use looprail_loop_core::message::{ContentPart, Message, Role};
use serde::{Deserialize, Serialize};

/// Decides which logged tool results are errors (real logs carry no flag).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ErrorPatterns {
    /// A result starting with one of these (after leading whitespace) is an error.
    pub prefixes: Vec<String>,
    /// A result containing one of these is an error.
    pub contains: Vec<String>,
}

impl Default for ErrorPatterns {
    fn default() -> Self {
        let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        Self {
            prefixes: owned(&["Error", "error:", "ERROR", "Exception", "Traceback"]),
            contains: owned(&[
                "No such file or directory",
                "command not found",
                "Permission denied",
                "Traceback (most recent call last)",
                "not found",
            ]),
        }
    }
}

impl ErrorPatterns {
    /// True when `text` reads as an error (one text; [`ErrorPatterns::classify`] reads a whole
    /// log faster).
    pub fn is_error(&self, text: &str) -> bool {
        self.starts_as_error(text) || self.contains.iter().any(|c| text.contains(c.as_str()))
    }

    /// True when `text`, after leading whitespace, starts with one of the prefixes.
    fn starts_as_error(&self, text: &str) -> bool {
        let trimmed = text.trim_start();
        self.prefixes.iter().any(|p| trimmed.starts_with(p.as_str()))
    }

    /// Marks as errors the tool results of `messages` that these patterns recognise (a result
    /// already flagged by its log, as Anthropic's are, stays flagged). Builds the
    /// [`ErrorClassifier`] for this one call: a caller classifying often keeps one instead.
    pub fn classify(&self, messages: &mut [Message]) {
        self.classifier().classify(messages);
    }

    /// These patterns made ready to search: the `contains` patterns as memchr's SIMD finders,
    /// without those another one already finds (`command not found` holds `not found`: it adds
    /// no match, and no search).
    ///
    /// ```
    /// use looprail_guardrails::replay::ErrorPatterns;
    /// use looprail_loop_core::message::{Message, ToolResult};
    ///
    /// let classifier = ErrorPatterns::default().classifier();
    /// let mut log = vec![Message::tool_result(ToolResult::ok("c1", "bash: rg: command not found"))];
    /// classifier.classify(&mut log);
    /// assert!(log[0].tool_results().all(|r| r.is_error));
    /// ```
    pub fn classifier(&self) -> ErrorClassifier {
        let needed = self.contains.iter().enumerate().filter(|(i, pattern)| {
            !self.contains.iter().enumerate().any(|(j, other)| {
                // Of two equal patterns, the first is kept.
                pattern.contains(other.as_str()) && (pattern.len() > other.len() || j < *i)
            })
        });
        let finders = needed.map(|(_, c)| memchr::memmem::Finder::new(c.as_bytes()).into_owned()).collect();
        ErrorClassifier { prefixes: self.prefixes.clone(), finders }
    }
}

/// [`ErrorPatterns`] ready to search, built once ([`ErrorPatterns::classifier`]) for many
/// logs.
#[derive(Debug, Clone)]
pub struct ErrorClassifier {
    prefixes: Vec<String>,
    finders: Vec<memchr::memmem::Finder<'static>>,
}

impl ErrorClassifier {
    /// True when `text` reads as an error.
    pub fn is_error(&self, text: &str) -> bool {
        let trimmed = text.trim_start();
        self.prefixes.iter().any(|p| trimmed.starts_with(p.as_str()))
            || self.finders.iter().any(|f| f.find(text.as_bytes()).is_some())
    }

    /// Marks as errors the tool results of `messages` that read as errors (a result already
    /// flagged by its log, as Anthropic's are, stays flagged).
    pub fn classify(&self, messages: &mut [Message]) {
        for message in messages.iter_mut().filter(|m| m.role == Role::Tool) {
            for part in &mut message.content {
                if let ContentPart::ToolResult(result) = part {
                    result.is_error = result.is_error || self.is_error(&result.content);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tool(text: &str) -> Message {
        Message::tool_result(looprail_loop_core::message::ToolResult::ok("c", text))
    }

    proptest! {
        /// Classifying a log marks exactly the results `is_error` calls errors, whatever the
        /// patterns (empty ones included) and wherever they sit in the text.
        #[test]
        fn classify_marks_what_is_error_finds(
            parts in proptest::collection::vec(
                prop::sample::select(vec!["Error", "error:", " ", "\n", "not ", "found", "x", "No such file", " or directory", "Traceback"]),
                0..12,
            ),
            extra in proptest::collection::vec("[a-z ]{0,4}", 0..3),
        ) {
            let mut patterns = ErrorPatterns::default();
            patterns.contains.extend(extra);
            let text: String = parts.concat();
            let mut messages = vec![tool(&text)];
            patterns.classify(&mut messages);
            let flagged = messages[0].tool_results().next().is_some_and(|r| r.is_error);
            prop_assert_eq!(flagged, patterns.is_error(&text));
        }
    }

    #[test]
    fn the_default_patterns_read_common_failures() {
        let patterns = ErrorPatterns::default();
        assert!(patterns.is_error("  Error: boom"));
        assert!(patterns.is_error("bash: foo: command not found"));
        assert!(patterns.is_error("cat: x: No such file or directory"));
        assert!(!patterns.is_error("All 12 tests passed"));
        let mut messages = vec![tool("ok"), tool("Traceback (most recent call last):")];
        patterns.classify(&mut messages);
        let flags: Vec<bool> = messages.iter().flat_map(Message::tool_results).map(|r| r.is_error).collect();
        assert_eq!(flags, [false, true]);
    }
}
