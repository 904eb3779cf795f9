//! What a request declares before its messages: the names of its tools, and the part of its
//! conversation's head that they and the system prompt make ([`identity::declared`]), kept by
//! the bytes they came as ([`BytesMemo`]).
//!
//! A coding agent re-sends its tools' declarations and its system prompt with every request:
//! tens of kilobytes of descriptions and schemas. Reading the names out of them and hashing
//! the prompt's text took ~40 µs per request for a 35 KB tool list and a 13 KB prompt; finding
//! them by their bytes takes ~2 µs (the `added_latency` bench's coding-agent rows show what a
//! whole request adds).

use std::sync::Arc;

use crate::bytes_memo::BytesMemo;
use crate::identity;
use crate::request::Request;

/// How many distinct declarations are kept.
const KEPT: usize = 256;

/// The most bytes of declarations kept.
const KEPT_BYTES: usize = 8 << 20;

/// What a request declares before its messages.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Declared {
    /// The names of the tools it declares.
    pub(crate) tools: Arc<[String]>,
    /// [`identity::declared`] of its API, tools and system prompt.
    pub(crate) head: u64,
}

impl Declared {
    /// Reads them from the request.
    fn read(request: &Request<'_>) -> Self {
        let tools = request.tool_names();
        let head = identity::declared(request.api().name(), &tools, &request.system_text());
        Self { tools: tools.into(), head }
    }
}

/// Declarations by their bytes.
pub(crate) struct Declarations {
    known: BytesMemo<Declared>,
}

impl Declarations {
    /// None known yet.
    pub(crate) fn new() -> Self {
        Self { known: BytesMemo::new(KEPT, KEPT_BYTES) }
    }

    /// What `request` declares, read only when these bytes were not seen before.
    pub(crate) fn of(&self, request: &Request<'_>) -> Declared {
        let pieces = [
            request.api().name().as_bytes(),
            request.tools_raw().as_bytes(),
            request.system_raw().as_bytes(),
        ];
        self.known.get(&pieces, || Declared::read(request))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::wire::Api;

    fn body(api: Api, tools: &[&str], system: Option<Value>) -> String {
        let tools: Vec<Value> = tools
            .iter()
            .map(|name| match api {
                Api::OpenAi => json!({"type": "function", "function": {"name": name, "parameters": {}}}),
                _ => json!({"name": name, "input_schema": {"type": "object"}}),
            })
            .collect();
        let mut body = json!({"model": "m", "tools": tools});
        let list = if api == Api::Responses { "input" } else { "messages" };
        body[list] = json!([{"role": "user", "content": "hi"}]);
        if let Some(system) = system {
            body[if api == Api::Responses { "instructions" } else { "system" }] = system;
        }
        body.to_string()
    }

    fn system() -> impl Strategy<Value = Option<Value>> {
        let text = "[a-c \\n\"é]{0,10}";
        prop_oneof![
            Just(None),
            text.prop_map(|t| Some(json!(t))),
            proptest::collection::vec(text, 1..3).prop_map(|ts| Some(json!(
                ts.iter().map(|t| json!({"type": "text", "text": t})).collect::<Vec<_>>()
            )))
        ]
    }

    proptest! {
        /// Found by its bytes or read, a request's declaration is the one reading it gives: its
        /// tools' names and the head part of its API, tools and system prompt.
        #[test]
        fn a_kept_declaration_is_the_one_reading_gives(
            asks in proptest::collection::vec(
                (proptest::sample::select(vec![Api::OpenAi, Api::Anthropic, Api::Responses]),
                 proptest::collection::vec("[a-c]{1,3}", 0..4), system()),
                1..6),
        ) {
            let declarations = Declarations::new();
            for (api, tools, system) in asks.iter().chain(asks.iter()) {
                let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
                let sent = body(*api, &tools, system.clone());
                let request = Request::parse(*api, sent.as_bytes()).unwrap();
                let names = request.tool_names();
                prop_assert_eq!(&names, &tools);
                let expected = identity::declared(api.name(), &names, &request.system_text());
                let found = declarations.of(&request);
                prop_assert_eq!(&*found.tools, &names[..]);
                prop_assert_eq!(found.head, expected);
            }
        }
    }

    #[test]
    fn the_same_declarations_on_another_api_are_that_apis_own() {
        let declarations = Declarations::new();
        let sent = body(Api::Anthropic, &["read"], Some(json!("be brief")));
        let anthropic = declarations.of(&Request::parse(Api::Anthropic, sent.as_bytes()).unwrap());
        let openai = declarations.of(&Request::parse(Api::OpenAi, sent.as_bytes()).unwrap());
        assert_ne!(anthropic.head, openai.head);
        assert_eq!(anthropic.head, identity::declared("anthropic", &["read".to_owned()], "be brief"));
    }
}
