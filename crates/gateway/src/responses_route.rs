//! `POST /v1/responses`: a request is made whole before the gateway's common handling. The
//! guards read whole conversations, so a request continuing a response the gateway relayed
//! (`previous_response_id`) gets its conversation back from the kept chain
//! ([`crate::response_chain`]) and goes upstream whole; a plain string `input` is one user
//! message, as the API reads it. A conversation stored upstream by the Conversations API
//! (`conversation`) cannot be read and is refused, saying so.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Response};
use looprail_loop_core::json_text::json_text;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::Gateway;
use crate::respond::{json as reply_json, refused};
use crate::response_chain::{self, ChainError, Start};
use crate::wire::Api;

/// The fields read before anything else: skimmed, not read into a tree.
#[derive(serde::Deserialize)]
struct Shape<'a> {
    #[serde(borrow, default)]
    previous_response_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    conversation: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    store: Option<&'a RawValue>,
}

fn given(field: Option<&RawValue>) -> bool {
    field.is_some_and(|v| v.get() != "null")
}

/// A request's `input` as a list of items (a string is one user message).
fn input_items(input: Option<Value>) -> Result<Vec<Value>, &'static str> {
    match input {
        Some(Value::Array(items)) => Ok(items),
        Some(Value::String(text)) => Ok(vec![json!({ "role": "user", "content": text })]),
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err("`input` must be a list of items or a string"),
    }
}

/// The handler.
pub(crate) async fn responses(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let api = Api::Responses;
    if !gateway.authorized(&headers) {
        return refused(api);
    }
    let bad = |message: &str| reply_json(400, &api.error("invalid_request_error", message), None);
    let Ok(shape) = serde_json::from_slice::<Shape<'_>>(&body) else {
        return bad("the body is not a JSON object");
    };
    if given(shape.conversation) {
        return bad("the looprail gateway guards whole conversations: send the full `input` (or a \
             `previous_response_id` of a response it relayed) instead of `conversation`");
    }
    // `store: false`: the client asked that nothing be kept, and the gateway keeps no chain.
    let keep = shape.store.is_none_or(|v| v.get() != "false");
    let continued = given(shape.previous_response_id);
    let string_input = shape.input.is_some_and(|i| i.get().starts_with('"'));
    if !continued && !string_input {
        let start = keep.then_some(Start::Whole);
        return gateway.handle(api, "/v1/responses", &headers, body, start).await;
    }
    // Only now is the body read whole.
    let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(&body) else {
        return bad("the body is not a JSON object");
    };
    let items = match input_items(request.remove("input")) {
        Ok(items) => items,
        Err(e) => return bad(e),
    };
    let start = if continued {
        let previous = match request.remove("previous_response_id") {
            Some(Value::String(id)) if crate::identity::storable_id(&id) => id,
            _ => return bad("`previous_response_id` must be a response id"),
        };
        let chain = match gateway.response_chain(&previous).await {
            Ok(Some(chain)) => chain,
            Ok(None) => {
                return bad(&format!(
                    "`previous_response_id` {previous} is not a response this gateway relayed with \
                     `store` on: send the whole `input` instead"
                ));
            }
            Err(ChainError::Broken(e)) => return bad(&e),
            // The store's outage is not the client's mistake: the configured answer (a 503 the
            // SDKs retry, or the request forwarded as sent), never a 400.
            Err(ChainError::Load(e)) => {
                return gateway.store_failed(api, "/v1/responses", &headers, body, &e).await;
            }
        };
        let earlier = chain.ids.into_iter().skip(1).take(response_chain::EARLIER_KEPT).collect();
        let whole: Vec<Value> = chain.items.into_iter().chain(items.iter().cloned()).collect();
        request.insert("input".to_owned(), Value::Array(whole));
        keep.then_some(Start::After { previous, earlier, items })
    } else {
        request.insert("input".to_owned(), Value::Array(items));
        keep.then_some(Start::Whole)
    };
    let body = Bytes::from(json_text(&Value::Object(request)));
    gateway.handle(api, "/v1/responses", &headers, body, start).await
}

impl Gateway {
    /// The conversation up to response `id`, from the kept chain.
    async fn response_chain(
        &self,
        id: &str,
    ) -> Result<Option<response_chain::Chain>, ChainError<looprail_journal::JournalError>> {
        response_chain::chain(id, |keys| async move {
            // A link whose save still runs behind its answer is waited for.
            for key in &keys {
                if let Some(conversation) = self.write_behind.pending_conversation(key) {
                    self.write_behind.settled(&conversation).await;
                }
            }
            self.store.load_journals(&keys).await
        })
        .await
    }
}
