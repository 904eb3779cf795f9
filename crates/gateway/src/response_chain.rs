//! Responses API conversations continued by `previous_response_id`. The gateway guards whole
//! conversations, so it keeps what each response it relayed added: the client's new input
//! items and the response's output items, linked to the response before (a request naming no
//! previous response starts a chain with its whole input). A request naming a previous
//! response is made whole again from that chain and goes on like any other: the guards read
//! it all, and the upstream gets the whole input instead of the id.
//!
//! Nothing is kept for a request with `store: false` (the client asked for no storage), nor for
//! a request continuing a conversation it sent whole (the chain would repeat the history).
//!
//! A link also names up to [`EARLIER_KEPT`] responses before its previous one, so a chain of
//! `n` responses is read back in about `n / 64` queries, not `n` (one round trip each on
//! PostgreSQL).

use serde::{Deserialize, Serialize};

use crate::request::Request;
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
    /// The responses before `previous`, nearest first, at most [`EARLIER_KEPT`].
    #[serde(default)]
    pub earlier: Vec<String>,
    /// The items the request brought and the response's output items.
    pub items: Vec<Value>,
}

/// How many responses before its previous one a link names.
pub const EARLIER_KEPT: usize = 63;

/// A conversation read back from its chain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chain {
    /// Its items, oldest first.
    pub items: Vec<Value>,
    /// Its responses, nearest first (the one it was read from first).
    pub ids: Vec<String>,
}

/// How a Responses request starts its link, decided before the conversation is known.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// It continued `previous` with `items`, the client's own input.
    After {
        /// The response it named.
        previous: String,
        /// The responses before `previous`, nearest first (at most [`EARLIER_KEPT`]).
        earlier: Vec<String>,
        /// Its input items as the client sent them.
        items: Vec<Value>,
    },
    /// It sent its whole input: a chain starts there if the conversation is new.
    Whole,
}

impl Start {
    /// The link's start once the conversation is known: `from` is the first input item the
    /// guards had not seen (0 for a new conversation); `request` the request as sent upstream.
    pub fn link(self, from: usize, request: &Request<'_>) -> Option<Link> {
        match self {
            Start::After { previous, earlier, items } => {
                Some(Link { previous: Some(previous), earlier, items })
            }
            Start::Whole if from == 0 => {
                Some(Link { previous: None, earlier: Vec::new(), items: request.items()? })
            }
            Start::Whole => None,
        }
    }
}

/// The longest chain read back: past it a conversation is refused, not walked for ever.
pub const MAX_CHAIN: usize = 100_000;

/// Why a chain could not be read back.
#[derive(Debug, PartialEq, Eq)]
pub enum ChainError<E> {
    /// The chain is broken or too long: the request cannot be served (a 400).
    Broken(String),
    /// The store could not be read: the store's outage, not the client's mistake.
    Load(E),
}

/// The conversation up to and including response `id`, from `load` (the links stored under
/// the keys it is given, in any order, missing ones left out). `Ok(None)` when the gateway never
/// kept `id`; [`ChainError::Broken`] when the chain is broken or too long, and
/// [`ChainError::Load`] with `load`'s error when the store cannot be read.
pub async fn chain<F, Fut, E>(id: &str, mut load: F) -> Result<Option<Chain>, ChainError<E>>
where
    F: FnMut(Vec<String>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<(String, Value)>, E>>,
{
    let mut ids: Vec<String> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let mut pending = vec![id.to_owned()];
    while !pending.is_empty() {
        if ids.len() + pending.len() > MAX_CHAIN {
            return Err(ChainError::Broken(format!(
                "the conversation before `{id}` is longer than {MAX_CHAIN} responses"
            )));
        }
        let found =
            load(pending.iter().map(|id| response_key(id)).collect()).await.map_err(ChainError::Load)?;
        for wanted in pending.drain(..) {
            let key = response_key(&wanted);
            let link = found
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| serde_json::from_value(v.clone()).ok());
            let Some(link) = link else {
                return match ids.is_empty() {
                    true => Ok(None),
                    false => Err(ChainError::Broken(format!(
                        "the response `{wanted}` this conversation continues is no longer kept"
                    ))),
                };
            };
            ids.push(wanted);
            links.push(link);
        }
        let oldest = links.last().map(|l: &Link| (l.previous.clone(), l.earlier.clone()));
        pending = oldest
            .map(|(previous, earlier)| previous.into_iter().chain(earlier).collect())
            .unwrap_or_default();
    }
    // Each link's previous is the next one read: a link naming other responses is no chain.
    if links.iter().zip(ids.iter().skip(1)).any(|(link, next)| link.previous.as_deref() != Some(next)) {
        return Err(ChainError::Broken(format!("the responses before `{id}` do not form one conversation")));
    }
    let items = links.into_iter().rev().flat_map(|link| link.items).collect();
    Ok(Some(Chain { items, ids }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    /// A store of links as `chain` reads it, counting its queries.
    struct Links(HashMap<String, Value>, std::cell::Cell<usize>);

    impl Links {
        /// A chain of `n` responses `r0`..`r{n-1}`, each adding one item `i`, each naming the
        /// ones before as a gateway writes them.
        fn of(n: usize) -> Self {
            let mut stored = HashMap::new();
            for i in 0..n {
                let earlier: Vec<String> =
                    (0..i.saturating_sub(1)).rev().take(EARLIER_KEPT).map(|j| format!("r{j}")).collect();
                let link = Link {
                    previous: i.checked_sub(1).map(|j| format!("r{j}")),
                    earlier,
                    items: vec![json!(i)],
                };
                stored.insert(response_key(&format!("r{i}")), serde_json::to_value(link).unwrap());
            }
            Self(stored, std::cell::Cell::new(0))
        }

        async fn read(&self, id: &str) -> Result<Option<Chain>, String> {
            chain(id, |keys: Vec<String>| {
                self.1.set(self.1.get() + 1);
                let found: Vec<(String, Value)> =
                    keys.into_iter().filter_map(|k| self.0.get(&k).map(|v| (k, v.clone()))).collect();
                async move { Ok::<_, String>(found) }
            })
            .await
            .map_err(|e| match e {
                ChainError::Broken(message) | ChainError::Load(message) => message,
            })
        }
    }

    #[tokio::test]
    async fn a_chain_reads_back_oldest_first_in_few_queries_and_a_gap_is_an_error() {
        let links = Links::of(300);
        let read = links.read("r299").await.unwrap().unwrap();
        assert_eq!(read.items, (0..300).map(|i| json!(i)).collect::<Vec<_>>());
        assert_eq!(read.ids.first().map(String::as_str), Some("r299"));
        assert_eq!(read.ids.len(), 300);
        assert!(links.1.get() <= 1 + 300 / 64 + 1, "{} queries", links.1.get());
        assert_eq!(links.read("r0").await.unwrap().unwrap().items, [json!(0)]);
        assert_eq!(links.read("unknown").await, Ok(None));

        let mut gap = Links::of(10);
        gap.0.remove(&response_key("r4"));
        assert!(gap.read("r9").await.unwrap_err().contains("r4"), "a broken chain says where");
        // Links written before `earlier` existed are read one by one, all the same.
        let mut old = Links::of(5);
        for link in old.0.values_mut() {
            link.as_object_mut().unwrap().remove("earlier");
        }
        assert_eq!(old.read("r4").await.unwrap().unwrap().items.len(), 5);
    }

    #[tokio::test]
    async fn a_store_that_cannot_be_read_is_a_load_error_not_a_missing_response() {
        let failing =
            chain("r3", |_keys: Vec<String>| async { Err::<Vec<(String, Value)>, _>("locked") }).await;
        assert_eq!(failing.unwrap_err(), ChainError::Load("locked"));
    }

    #[test]
    fn a_whole_request_starts_a_chain_only_for_a_new_conversation() {
        let body = br#"{"model": "m", "input": [{"role": "user", "content": "hi"}]}"#;
        let body = Request::parse(crate::wire::Api::Responses, body).unwrap();
        assert_eq!(Start::Whole.link(0, &body).unwrap().items, [json!({"role": "user", "content": "hi"})]);
        assert_eq!(Start::Whole.link(3, &body), None);
        let after = Start::After {
            previous: "r1".into(),
            earlier: vec!["r0".into()],
            items: vec![json!({"type": "function_call_output"})],
        };
        assert_eq!(after.link(7, &body).unwrap().previous.as_deref(), Some("r1"));
        use crate::identity::storable_id;
        assert!(storable_id("resp_68a1b2") && !storable_id("../x y") && !storable_id(""));
    }
}
