//! Responses API conversations continued by `previous_response_id`. The gateway guards whole
//! conversations, so it keeps what each response it relayed added: the client's new input
//! items and the response's output items, linked to the response before (a request naming no
//! previous response starts a chain with its whole input). A request naming a previous
//! response is made whole again from that chain and goes on like any other: the guards read
//! it all, and the upstream gets the whole input instead of the id.
//!
//! Nothing is kept for a request with `store: false` (the client asked for no storage), nor for
//! a request continuing a conversation it sent whole (the chain would repeat the history).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key a response's link is stored under.
pub fn response_key(id: &str) -> String {
    format!("gateway/response/{id}")
}

/// What one response added to its conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// The response it continued (`None` for the first of the chain).
    pub previous: Option<String>,
    /// The items the request brought and the response's output items.
    pub items: Vec<Value>,
}

/// How a Responses request starts its link, decided before the conversation is known.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// It continued `previous` with `items`, the client's own input.
    After {
        /// The response it named.
        previous: String,
        /// Its input items as the client sent them.
        items: Vec<Value>,
    },
    /// It sent its whole input: a chain starts there if the conversation is new.
    Whole,
}

impl Start {
    /// The link's start once the conversation is known: `from` is the first input item the
    /// guards had not seen (0 for a new conversation); `body` the request as sent upstream.
    pub fn link(self, from: usize, body: &[u8]) -> Option<Link> {
        match self {
            Start::After { previous, items } => Some(Link { previous: Some(previous), items }),
            Start::Whole if from == 0 => {
                #[derive(Deserialize)]
                struct Input {
                    input: Vec<Value>,
                }
                let input = serde_json::from_slice::<Input>(body).ok()?.input;
                Some(Link { previous: None, items: input })
            }
            Start::Whole => None,
        }
    }
}

/// The longest chain read back: past it a conversation is refused, not walked for ever.
pub const MAX_CHAIN: usize = 100_000;

/// Whether a client's response id is one the gateway could have stored: short and printable.
pub fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_graphic())
}

/// The items of a conversation up to and including response `id`, oldest first, from `load`
/// (a link by key). `Ok(None)` when the gateway never kept `id`; an error when the chain is
/// broken or too long.
pub async fn items<F, Fut>(id: &str, mut load: F) -> Result<Option<Vec<Value>>, String>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Option<Value>>,
{
    let mut parts: Vec<Vec<Value>> = Vec::new();
    let mut next = Some(id.to_owned());
    while let Some(id) = next {
        if parts.len() >= MAX_CHAIN {
            return Err(format!("the conversation before `{id}` is longer than {MAX_CHAIN} responses"));
        }
        let link = load(response_key(&id)).await.and_then(|v| serde_json::from_value::<Link>(v).ok());
        let Some(link) = link else {
            return match parts.is_empty() {
                true => Ok(None),
                false => Err(format!("the response `{id}` this conversation continues is no longer kept")),
            };
        };
        parts.push(link.items);
        next = link.previous;
    }
    parts.reverse();
    Ok(Some(parts.concat()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    #[tokio::test]
    async fn a_chain_reads_back_oldest_first_and_a_gap_is_an_error() {
        let mut stored = HashMap::new();
        let link = |previous: Option<&str>, items: Value| {
            serde_json::to_value(Link {
                previous: previous.map(str::to_owned),
                items: items.as_array().unwrap().clone(),
            })
            .unwrap()
        };
        stored.insert(
            response_key("r1"),
            link(None, json!([{"role": "user", "content": "hi"}, {"type": "message", "n": 1}])),
        );
        stored.insert(
            response_key("r2"),
            link(Some("r1"), json!([{"role": "user", "content": "more"}, {"type": "message", "n": 2}])),
        );
        stored.insert(response_key("r4"), link(Some("r3"), json!([])));
        let load = |key: String| {
            let found = stored.get(&key).cloned();
            async move { found }
        };
        let all = items("r2", load).await.unwrap().unwrap();
        let contents: Vec<&Value> = all.iter().map(|i| i.get("content").unwrap_or(&i["n"])).collect();
        assert_eq!(contents, [&json!("hi"), &json!(1), &json!("more"), &json!(2)]);
        assert_eq!(items("unknown", load).await, Ok(None));
        assert!(items("r4", load).await.unwrap_err().contains("r3"), "a broken chain says where");
    }

    #[test]
    fn a_whole_request_starts_a_chain_only_for_a_new_conversation() {
        let body = br#"{"model": "m", "input": [{"role": "user", "content": "hi"}]}"#;
        assert_eq!(Start::Whole.link(0, body).unwrap().items.len(), 1);
        assert_eq!(Start::Whole.link(3, body), None);
        let after =
            Start::After { previous: "r1".into(), items: vec![json!({"type": "function_call_output"})] };
        assert_eq!(after.link(7, body).unwrap().previous.as_deref(), Some("r1"));
        assert!(plausible_id("resp_68a1b2") && !plausible_id("../x y") && !plausible_id(""));
    }
}
