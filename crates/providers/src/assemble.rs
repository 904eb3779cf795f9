//! Assembles streamed tool calls from their fragments, by position.

use std::collections::BTreeMap;

use looprail_loop_core::message::ToolCall;

#[derive(Debug, Default, Clone)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
}

/// Tool calls under construction, keyed by the stream's index for each call.
#[derive(Debug, Default, Clone)]
pub struct ToolCallAssembler {
    calls: BTreeMap<usize, Partial>,
}

impl ToolCallAssembler {
    /// Adds a fragment: an id or name sets them (first one wins for the id), arguments append.
    pub fn push(&mut self, index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) {
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id.filter(|i| !i.is_empty())
            && call.id.is_empty()
        {
            call.id = id.to_owned();
        }
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            call.name.push_str(name);
        }
        call.arguments.push_str(arguments);
    }

    /// True when no call was started.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The calls in index order. Arguments are trimmed; an empty text becomes `{}`. A call
    /// without an id gets one derived from its index so results can still refer to it.
    pub fn finish(&self) -> Vec<ToolCall> {
        self.calls
            .iter()
            .map(|(index, call)| {
                let arguments = call.arguments.trim();
                let arguments = if arguments.is_empty() { "{}" } else { arguments };
                let id = if call.id.is_empty() { format!("call_{index}") } else { call.id.clone() };
                ToolCall::new(id, call.name.clone(), arguments)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_assemble_by_index_in_any_interleaving() {
        let mut a = ToolCallAssembler::default();
        a.push(1, Some("b"), Some("read"), "");
        a.push(0, Some("a"), Some("list"), "{\"d");
        a.push(1, None, None, "{\"p\":1}");
        a.push(0, None, None, "ir\":\"/\"}  ");
        let calls = a.finish();
        assert_eq!(calls[0], ToolCall::new("a", "list", "{\"dir\":\"/\"}"));
        assert_eq!(calls[1], ToolCall::new("b", "read", "{\"p\":1}"));
    }

    #[test]
    fn a_call_without_arguments_gets_an_empty_object() {
        let mut a = ToolCallAssembler::default();
        a.push(0, Some("x"), Some("now"), "");
        assert_eq!(a.finish()[0].arguments, "{}");
    }
}
