//! Which conversation a request belongs to. The APIs are stateless (each request carries the
//! whole history), so a conversation is named by the client (`x-looprail-run`) or recognised:
//! its request extends the history the gateway last answered. Histories are fingerprinted as
//! a hash chain over the normalised messages (after the API and the declared tools), so the
//! fingerprint of every prefix costs one pass.

use looprail_loop_core::message::Message;

/// The header a client may use to name its conversation.
pub const RUN_HEADER: &str = "x-looprail-run";

/// How many trailing prefixes are looked up (a request adds a few messages, not dozens).
pub const LOOKBACK: usize = 16;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// `prefixes[k]` is the fingerprint of the first `k` messages (so `prefixes[0]` names the API
/// and the tools alone).
pub fn prefixes(api: &str, tools: &serde_json::Value, messages: &[Message]) -> Vec<u64> {
    let mut h = fnv(0xcbf2_9ce4_8422_2325, api.as_bytes());
    h = fnv(h, tools.to_string().as_bytes());
    let mut out = Vec::with_capacity(messages.len() + 1);
    out.push(h);
    for message in messages {
        h = extend(h, message);
        out.push(h);
    }
    out
}

/// The fingerprint of a history whose prefix has fingerprint `h`, extended by `message`: what
/// identifies a message across echoes is its role, text, and tool calls or results (a client
/// may echo an assistant message with extra fields, or `""` for no content).
pub fn extend(h: u64, message: &Message) -> u64 {
    const FIELD: &[u8] = &[0x1f];
    let mut h = fnv(h, &[0x1e]);
    h = fnv(h, format!("{:?}", message.role).as_bytes());
    h = fnv(fnv(h, FIELD), message.joined_text().unwrap_or_default().as_bytes());
    for call in message.tool_calls() {
        for part in [&call.id, &call.name, &call.arguments] {
            h = fnv(fnv(h, FIELD), part.as_bytes());
        }
    }
    for result in message.tool_results() {
        for part in [&result.call_id, &result.content] {
            h = fnv(fnv(h, FIELD), part.as_bytes());
        }
    }
    h
}

/// The key under which a fingerprint is stored.
pub fn prefix_key(fingerprint: u64) -> String {
    format!("gateway/prefix/{fingerprint:016x}")
}

/// The key under which a conversation's state is stored.
pub fn state_key(id: &str) -> String {
    format!("gateway/conversation/{id}")
}

/// A new conversation id from its first fingerprint and the time.
pub fn new_id(fingerprint: u64, now_ns: u128) -> String {
    format!("gw-{:016x}", fnv(fingerprint, &now_ns.to_le_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use looprail_loop_core::message::ToolCall;

    #[test]
    fn a_history_and_its_extension_share_their_prefix_fingerprints() {
        let first = vec![Message::system("s"), Message::user("hi")];
        let mut longer = first.clone();
        longer.push(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "read", "{}")]));
        let tools = serde_json::json!([{ "name": "read" }]);
        let a = prefixes("openai", &tools, &first);
        let b = prefixes("openai", &tools, &longer);
        assert_eq!(a[..], b[..3]);
        assert_ne!(b[2], b[3]);
        assert_ne!(prefixes("anthropic", &tools, &first)[2], a[2], "the API is part of it");
        assert_ne!(prefixes("openai", &serde_json::json!([]), &first)[2], a[2], "so are the tools");
    }
}
