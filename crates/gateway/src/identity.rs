//! Which conversation a request belongs to. The APIs are stateless (each request carries the
//! whole history), so a conversation is named by the client (`x-looprail-run`) or recognised:
//! the request extends the history the gateway last answered.
//!
//! Recognising it must not cost a pass over the whole history, so a history is fingerprinted
//! by its anchors, not by every message: the API, the declared tools, the system prompt and the
//! first message (the *head*), the history's length, and its last two messages. After each
//! answer the gateway stores the fingerprint of the history the client now holds (the request
//! and the reply); the next request's history has that history as a prefix, so the
//! fingerprint of one of its last few prefixes matches. Messages are normalised first (role,
//! text, tool calls and results), so a client that echoes a reply with extra fields, moves a
//! `cache_control` mark, or re-serialises tool input still matches. A Responses output item
//! that carries its id is known by that id ([`id_hash`]): clients send such an item back whole
//! or, with `store` on, as an `item_reference` (the Vercel AI SDK does for every item), and a
//! reply of several items (reasoning, text, calls) comes back as that many wire messages.
//!
//! What this gives up against hashing every message: two conversations are taken for one only
//! when they share their head and, at the same length, their last two messages (with tool
//! calls, the same provider-made call ids), which separate conversations do not do in practice;
//! and a history edited in the middle but with the same length and ending is still recognised
//! (which is what a client that trims old tool results wants).

use looprail_loop_core::message::{ContentPart, Message};

/// The header a client may use to name its conversation.
pub const RUN_HEADER: &str = "x-looprail-run";

/// How many trailing prefixes are looked up (a request adds a few messages, not dozens).
pub const LOOKBACK: usize = 16;

const FIELD: u8 = 0x1f;
const RECORD: u8 = 0x1e;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn field(h: u64, bytes: &[u8]) -> u64 {
    fnv(fnv(h, &[FIELD]), bytes)
}

/// The normalised fingerprint of one wire message (the looprail messages it reads as): role,
/// text without whitespace, tool calls (arguments read as JSON) and results.
pub fn message_hash(messages: &[Message]) -> u64 {
    // Streamed into the hash as it is read: no string is built for any part.
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    for message in messages {
        h.bytes(&[RECORD]);
        h.bytes(&[FIELD]);
        let _ = std::fmt::Write::write_fmt(&mut h, format_args!("{:?}", message.role));
        // Text without its whitespace: a streamed reply's text blocks arrive joined with
        // nothing, the client's echo of them is joined with line breaks.
        h.bytes(&[FIELD]);
        for part in &message.content {
            if let ContentPart::Text { text } = part {
                for c in text.chars().filter(|c| !c.is_whitespace()) {
                    h.bytes(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
            }
        }
        for call in message.tool_calls() {
            h.field(call.id.as_bytes());
            h.field(call.name.as_bytes());
            // Arguments as JSON, not as spelled: Anthropic streams `{"q": "x"}` and the client
            // echoes the input it parsed as `{"q":"x"}`.
            h.bytes(&[FIELD]);
            match serde_json::from_str::<serde_json::Value>(&call.arguments) {
                Ok(arguments) => {
                    let _ = serde_json::to_writer(&mut h, &arguments);
                }
                Err(_) => h.bytes(call.arguments.as_bytes()),
            }
        }
        for result in message.tool_results() {
            h.field(result.call_id.as_bytes());
            h.field(result.content.as_bytes());
        }
    }
    h.0
}

/// FNV-1a as a sink that text and JSON are written into.
struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        self.0 = fnv(self.0, bytes);
    }

    fn field(&mut self, bytes: &[u8]) {
        self.0 = field(self.0, bytes);
    }
}

impl std::fmt::Write for Fnv {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.bytes(text.as_bytes());
        Ok(())
    }
}

impl std::io::Write for Fnv {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.bytes(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The fingerprint of a Responses output item known by its id: the client sends it back
/// whole (with its id) or as an `item_reference` to it, and both read the same.
pub fn id_hash(id: &str) -> u64 {
    field(fnv(0xcbf2_9ce4_8422_2325, b"item-id"), id.as_bytes())
}

/// The head of a conversation: the API, the declared tools, the system prompt given apart
/// from the messages, and the first message's fingerprint (`None` when there is none).
/// The same as [`head_of`]`(`[`declared`]`(api, tools, system), first)`.
pub fn head(api: &str, tools: &[String], system: &str, first: Option<u64>) -> u64 {
    head_of(declared(api, tools, system), first)
}

/// The part of a head a request declares before its messages: the API, the tools, the system
/// prompt given apart (a request's own bytes tell it, so it can be kept by them).
pub fn declared(api: &str, tools: &[String], system: &str) -> u64 {
    let mut h = field(0xcbf2_9ce4_8422_2325, api.as_bytes());
    for tool in tools {
        h = field(h, tool.as_bytes());
    }
    field(fnv(h, &[RECORD]), system.as_bytes())
}

/// The head of a conversation from what its requests declare ([`declared`]) and the first
/// message's fingerprint.
pub fn head_of(declared: u64, first: Option<u64>) -> u64 {
    field(declared, &first.unwrap_or_default().to_le_bytes())
}

/// The fingerprint of a history of `len` messages under `head` whose last two messages have
/// fingerprints `before` (`None` when `len` is 1) and `last`.
pub fn anchor(head: u64, len: usize, before: Option<u64>, last: u64) -> u64 {
    let mut h = field(head, &(len as u64).to_le_bytes());
    h = field(h, &before.unwrap_or_default().to_le_bytes());
    field(h, &last.to_le_bytes())
}

/// The key under which a fingerprint is stored.
pub fn prefix_key(fingerprint: u64) -> String {
    format!("gateway/prefix/{fingerprint:016x}")
}

/// Whether an id from outside (a run header, a response id) may name a stored key: 1 to 128
/// printable ASCII characters.
pub fn storable_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_graphic())
}

/// The key under which a conversation's state is stored.
pub fn state_key(id: &str) -> String {
    format!("gateway/conversation/{id}")
}

/// A new conversation id from its head and the time.
pub fn new_id(head: u64, now_ns: u128) -> String {
    format!("gw-{:016x}", fnv(head, &now_ns.to_le_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use looprail_loop_core::message::ToolCall;

    #[test]
    fn anchors_tell_histories_apart_by_head_length_and_ending() {
        let call = |id: &str| Message::assistant_with_calls(None, vec![ToolCall::new(id, "read", "{}")]);
        let head_a = head("openai", &["read".into()], "", Some(message_hash(&[Message::user("hi")])));
        assert_ne!(
            head("anthropic", &["read".into()], "", Some(1)),
            head("openai", &["read".into()], "", Some(1))
        );
        assert_ne!(
            head("openai", &[], "", Some(1)),
            head("openai", &["read".into()], "", Some(1)),
            "the tools count"
        );
        assert_ne!(
            head("openai", &[], "be brief", Some(1)),
            head("openai", &[], "", Some(1)),
            "the system prompt too"
        );
        let last = message_hash(&[call("c1")]);
        let a = anchor(head_a, 2, Some(message_hash(&[Message::user("hi")])), last);
        assert_eq!(a, anchor(head_a, 2, Some(message_hash(&[Message::user("hi")])), last));
        assert_ne!(a, anchor(head_a, 3, Some(message_hash(&[Message::user("hi")])), last), "the length");
        assert_ne!(
            a,
            anchor(head_a, 2, Some(message_hash(&[Message::user("hey")])), last),
            "the message before"
        );
        assert_ne!(
            a,
            anchor(head_a, 2, Some(message_hash(&[Message::user("hi")])), message_hash(&[call("c2")]))
        );
        // A message reads the same however the client spelled it: only its normalised parts count.
        let spelled = |args: &str| {
            message_hash(&[Message::assistant_with_calls(None, vec![ToolCall::new("t1", "read", args)])])
        };
        assert_eq!(spelled(r#"{"path": "a.rs", "line": 3}"#), spelled(r#"{"line":3,"path":"a.rs"}"#));
        assert_ne!(spelled(r#"{"path": "a.rs"}"#), spelled(r#"{"path": "b.rs"}"#));
        assert_eq!(spelled("not json"), spelled("not json"));
        assert_eq!(
            message_hash(&[Message::assistant("Let me look.I found it.")]),
            message_hash(&[Message::assistant("Let me look.\nI found it.")])
        );
        assert_ne!(
            message_hash(&[Message::assistant("Let me look.")]),
            message_hash(&[Message::assistant("I found it.")])
        );
        assert_ne!(message_hash(&[Message::assistant("ok")]), message_hash(&[Message::user("ok")]));
    }

    /// Heads are stored (in prefix keys and conversation ids): these values are the ones every
    /// release so far gave, and must stay so.
    #[test]
    fn heads_keep_their_stored_values() {
        let tools = ["Read".to_owned(), "Bash".to_owned()];
        assert_eq!(head("anthropic", &tools, "You are a coding agent.", Some(42)), 0xad8dd633fa91d5b1);
        assert_eq!(head("openai", &[], "", None), 0x77c241fcaffade8c);
        assert_eq!(head("responses", &tools[..1], "é\n\"", Some(u64::MAX)), 0xe6e0c9effc5b8b4d);
    }

    /// The hash as first written: each part built as a string, then hashed. Fingerprints are
    /// stored, so the streamed form must give exactly these values.
    fn built_hash(messages: &[Message]) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325;
        for message in messages {
            h = fnv(h, &[RECORD]);
            h = field(h, format!("{:?}", message.role).as_bytes());
            let text: String =
                message.joined_text().unwrap_or_default().chars().filter(|c| !c.is_whitespace()).collect();
            h = field(h, text.as_bytes());
            for call in message.tool_calls() {
                let arguments = serde_json::from_str::<serde_json::Value>(&call.arguments)
                    .map_or_else(|_| call.arguments.clone(), |v| v.to_string());
                for part in [&call.id, &call.name, &arguments] {
                    h = field(h, part.as_bytes());
                }
            }
            for result in message.tool_results() {
                for part in [&result.call_id, &result.content] {
                    h = field(h, part.as_bytes());
                }
            }
        }
        h
    }

    fn any_message() -> impl proptest::strategy::Strategy<Value = Message> {
        use proptest::prelude::*;
        let text = "[ a-zé\\n\\t\"{}:,0-9]{0,24}";
        let arguments = prop_oneof![
            text.prop_map(|t| t),
            (text, -5_i64..5, any::<bool>())
                .prop_map(|(k, n, b)| format!(r#"{{ "{k}" : [{n}, {b}], "a":"\\u00e9 x" }}"#)),
        ];
        prop_oneof![
            text.prop_map(Message::user),
            text.prop_map(Message::system),
            text.prop_map(Message::assistant),
            (proptest::option::of(text), proptest::collection::vec((text, text, arguments), 0..3)).prop_map(
                |(said, calls)| Message::assistant_with_calls(
                    said,
                    calls.into_iter().map(|(id, name, args)| ToolCall::new(id, name, args)).collect()
                )
            ),
            (text, text, any::<bool>()).prop_map(|(id, content, ok)| Message::tool_result(if ok {
                looprail_loop_core::message::ToolResult::ok(id, content)
            } else {
                looprail_loop_core::message::ToolResult::error(id, content)
            })),
        ]
    }

    proptest::proptest! {
        #[test]
        fn the_streamed_hash_is_the_hash_of_the_built_parts(
            messages in proptest::collection::vec(any_message(), 0..4)
        ) {
            proptest::prop_assert_eq!(message_hash(&messages), built_hash(&messages));
        }
    }
}
