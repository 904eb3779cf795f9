//! The gateway on the OpenAI Responses API (`POST /v1/responses`), against a local upstream
//! that answers in that API's format: a looping client is nudged (a tagged input item) and then
//! concluded (the request sent with the tool choice `none`), a stream is relayed as it came, a string input
//! is one user message, and a request continuing a stored conversation is refused, saying why.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use looprail_gateway::GatewayConfig;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

fn settings(upstream: &str) -> GatewayConfig {
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.openai_key = None;
    settings.upstream.retries = 0;
    settings.upstream.backoff = Duration::from_millis(5);
    settings
}

async fn start(upstream: &str) -> String {
    common::serve(settings(upstream), "responses").await
}

/// A response calling `search` again, as the Responses API shapes it.
fn search_again(id: usize) -> String {
    json!({"id": format!("resp_{id}"), "object": "response", "created_at": 1, "status": "completed", "model": "gpt-x",
        "output": [{"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"), "name": "search",
            "arguments": "{\"q\":\"report\"}", "status": "completed"}],
        "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}})
    .to_string()
}

/// An upstream that answers with `reply(n)` (its n-th reply) while tools may be called, and
/// with the final answer once the tool choice is `none`.
async fn looping_upstream(reply: fn(usize) -> String) -> FakeServer {
    let counter = std::sync::atomic::AtomicUsize::new(0);
    FakeServer::responding(move |request| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if request.get("tools").is_some() && request["tool_choice"] != "none" {
            Reply::json(200, &reply(n))
        } else {
            Reply::json(200, &answer())
        }
    })
    .await
}

fn answer() -> String {
    json!({"id": "resp_final", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-x",
        "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "I could not find it.", "annotations": []}]}],
        "usage": {"input_tokens": 50, "output_tokens": 6, "total_tokens": 56}})
    .to_string()
}

async fn post(url: &str, body: &Value) -> (u16, Value, Option<String>) {
    let response = reqwest::Client::new()
        .post(format!("{url}/v1/responses"))
        .header("authorization", "Bearer sk-client")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let run = response.headers().get("x-looprail-run").map(|v| v.to_str().unwrap().to_owned());
    (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap_or(Value::Null), run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_responses_client_is_nudged_then_concluded() {
    let upstream = FakeServer::responding(|request| {
        if request.get("tools").is_some() && request["tool_choice"] != "none" {
            Reply::json(200, &search_again(1))
        } else {
            Reply::json(200, &answer())
        }
    })
    .await;
    let gw = start(&upstream.url).await;
    let tools = json!([{"type": "function", "name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]);
    let mut input = vec![json!({"role": "user", "content": "Find the report"})];
    let mut concluded = None;
    for step in 0..20 {
        let body = json!({"model": "gpt-x", "instructions": "You search.", "input": input, "tools": tools, "store": false});
        let (status, response, run) = post(&gw, &body).await;
        assert_eq!(status, 200, "{response}");
        assert!(run.is_some(), "the gateway names the conversation");
        let output = response["output"].as_array().unwrap().clone();
        if output.iter().all(|item| item["type"] == "message") {
            concluded = Some((step, response));
            break;
        }
        // The client runs the call and sends the whole conversation again, as Codex does.
        for item in output {
            let call = item["call_id"].as_str().unwrap().to_owned();
            input.push(item);
            input.push(json!({"type": "function_call_output", "call_id": call, "output": "no results"}));
        }
    }
    let (step, response) = concluded.expect("the loop is ended with a final answer");
    assert!(step > 2, "healthy first steps are forwarded untouched");
    assert_eq!(response["output"][0]["content"][0]["text"], "I could not find it.");
    let seen = upstream.requests();
    let tagged = |body: &Value| {
        body["input"].as_array().unwrap().iter().any(|item| item.to_string().contains("[looprail]"))
    };
    assert!(!tagged(&seen[0].body), "the first request went as the client sent it");
    assert!(
        seen.iter().any(|r| tagged(&r.body) && r.body.get("tool_choice").is_none()),
        "a nudge came before the end"
    );
    let last = &seen.last().unwrap().body;
    assert!(
        last["tool_choice"] == "none" && last.get("tools").is_some() && tagged(last),
        "the conclusion asks for a final answer with no tool to call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_relayed_and_odd_requests_are_answered_in_the_apis_format() {
    let events = [
        "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_s\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-x\",\"output\":[]}}\n\n",
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_s\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg_s\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hel\"}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_s\",\"output_index\":0,\"content_index\":0,\"delta\":\"lo.\"}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_s\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-x\",\"output\":[{\"type\":\"message\",\"id\":\"msg_s\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hello.\",\"annotations\":[]}]}],\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"total_tokens\":7}}}\n\n",
    ];
    let upstream = FakeServer::start(vec![Reply::sse_events(&events), Reply::json(200, &answer())]).await;
    let gw = start(&upstream.url).await;
    let response = reqwest::Client::new()
        .post(format!("{gw}/v1/responses"))
        .header("content-type", "application/json")
        .body(json!({"model": "gpt-x", "input": "Say hello", "stream": true}).to_string())
        .send()
        .await
        .unwrap();
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let text = response.text().await.unwrap();
    assert_eq!(text, events.concat(), "the stream goes to the client as it came");
    // A string input went upstream as one user message.
    let seen = upstream.requests();
    assert_eq!(seen[0].body["input"], json!([{"role": "user", "content": "Say hello"}]));
    // Continuing the relayed response by its id: the upstream gets the conversation whole.
    let (status, body, _) =
        post(&gw, &json!({"model": "gpt-x", "input": "And again", "previous_response_id": "resp_s"})).await;
    assert_eq!(status, 200, "{body}");
    let continued = &upstream.requests()[1].body;
    assert!(continued.get("previous_response_id").is_none(), "{continued}");
    let relayed_output = serde_json::from_str::<Value>(events[4].split("data: ").nth(1).unwrap().trim())
        .unwrap()["response"]["output"][0]
        .clone();
    assert_eq!(
        continued["input"],
        json!([{"role": "user", "content": "Say hello"}, relayed_output, {"role": "user", "content": "And again"}])
    );
    // An id it never relayed, and a conversation stored upstream, are refused, saying why.
    for stored in [json!({"previous_response_id": "resp_elsewhere"}), json!({"conversation": "conv_1"})] {
        let mut request = json!({"model": "gpt-x", "input": "hi"});
        request.as_object_mut().unwrap().extend(stored.as_object().unwrap().clone());
        let (status, body, _) = post(&gw, &request).await;
        assert_eq!(status, 400);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("previous_response_id") || message.contains("conversation"), "{body}");
    }
    for odd_input in [
        json!({"model": "gpt-x", "input": 7}),
        json!({"model": "gpt-x", "input": 7, "previous_response_id": "resp_s"}),
    ] {
        let (status, body, _) = post(&gw, &odd_input).await;
        assert_eq!(
            (status, body["error"]["type"].as_str()),
            (400, Some("invalid_request_error")),
            "{odd_input}"
        );
    }
    // A body that is no object, even one whose third element is a string, is refused, not read.
    for odd in [json!([null, null, "hi"]), json!("hi"), json!([])] {
        let (status, body, _) = post(&gw, &odd).await;
        assert_eq!((status, body["error"]["type"].as_str()), (400, Some("invalid_request_error")), "{odd}");
    }
    assert_eq!(upstream.requests().len(), 2, "no refused request reached the upstream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_client_continuing_by_response_id_is_guarded_as_one_conversation() {
    // The conversation-state style of the API: each request sends only its new items and names
    // the response before. The gateway keeps each response's items and sends the upstream the
    // whole conversation, so the ladder sees the loop across requests.
    let upstream = looping_upstream(search_again).await;
    let gw = start(&upstream.url).await;
    let tools = json!([{"type": "function", "name": "search", "parameters": {"type": "object"}}]);
    let mut body =
        json!({"model": "gpt-x", "instructions": "You search.", "input": "Find the report", "tools": tools});
    let mut runs = Vec::new();
    let mut concluded = false;
    for _ in 0..20 {
        let (status, response, run) = post(&gw, &body).await;
        assert_eq!(status, 200, "{response}");
        runs.push(run.unwrap());
        let output = response["output"].as_array().unwrap();
        if output.iter().all(|item| item["type"] == "message") {
            concluded = true;
            break;
        }
        let call = output[0]["call_id"].clone();
        body = json!({"model": "gpt-x", "instructions": "You search.", "tools": tools, "previous_response_id": response["id"],
            "input": [{"type": "function_call_output", "call_id": call, "output": "no results"}]});
    }
    assert!(concluded, "the loop is ended with a final answer");
    assert!(runs.windows(2).all(|w| w[0] == w[1]), "one conversation throughout: {runs:?}");
    let seen = upstream.requests();
    assert!(seen.iter().all(|r| r.body.get("previous_response_id").is_none()), "the upstream gets it whole");
    let lengths: Vec<usize> = seen.iter().map(|r| r.body["input"].as_array().unwrap().len()).collect();
    assert!(lengths.windows(2).all(|w| w[1] > w[0]), "each request carries all before it: {lengths:?}");
    let last = &seen.last().unwrap().body;
    assert_eq!(last["tool_choice"], "none", "concluded with no tool to call");

    // With `store: false` nothing is kept, so nothing can be continued by its id.
    let (status, response, _) =
        post(&gw, &json!({"model": "gpt-x", "input": "Find it", "tools": tools, "store": false})).await;
    assert_eq!(status, 200);
    let next =
        json!({"model": "gpt-x", "previous_response_id": response["id"], "input": "go on", "store": false});
    let (status, body, _) = post(&gw, &next).await;
    assert_eq!(status, 400, "{body}");
}

/// A reasoning model's reply: a reasoning item, a short text and the call, items of their own.
fn reason_and_search(id: usize) -> String {
    json!({"id": format!("resp_{id}"), "object": "response", "created_at": 1, "status": "completed", "model": "gpt-x",
        "output": [
            {"type": "reasoning", "id": format!("rs_{id}"), "summary": [], "encrypted_content": "gAAA"},
            {"type": "message", "id": format!("msg_{id}"), "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Searching again.", "annotations": []}]},
            {"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"), "name": "search",
                "arguments": "{\"q\":\"report\"}", "status": "completed"}],
        "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_of_several_items_continues_its_conversation_however_the_client_echoes_it() {
    // Reasoning models answer with several output items. Clients send them back whole (the
    // Agents SDK), without their ids (`store: false` requires it), or, with `store` on, as
    // references to the stored items (the Vercel AI SDK sends every item, calls included, as
    // `{"type": "item_reference", "id"}`): the guards read the referenced calls from the reply
    // the gateway relayed, so the loop is still seen.
    for echo in ["whole", "stripped", "reference"] {
        let upstream = looping_upstream(reason_and_search).await;
        let recordings = tempfile::tempdir().unwrap();
        let mut recording = settings(&upstream.url);
        recording.record_dir = Some(recordings.path().to_path_buf());
        let store = common::TempStore::new("recorded");
        let running = common::sdk::serve_settings(&store, recording, 0).await;
        let gw = running.url.clone();
        let tools = json!([{"type": "function", "name": "search", "parameters": {"type": "object"}}]);
        let mut input = vec![json!({"role": "user", "content": "Find the report"})];
        let mut runs = Vec::new();
        let mut concluded = false;
        for _ in 0..20 {
            let body =
                json!({"model": "gpt-x", "input": input, "tools": tools, "store": echo == "reference"});
            let (status, response, run) = post(&gw, &body).await;
            assert_eq!(status, 200, "{response}");
            runs.push(run.unwrap());
            let output = response["output"].as_array().unwrap().clone();
            if output.iter().all(|item| item["type"] == "message") {
                concluded = true;
                break;
            }
            for item in output {
                let mut sent = if echo == "reference" {
                    json!({"type": "item_reference", "id": item["id"]})
                } else {
                    item.clone()
                };
                if echo == "stripped" {
                    sent.as_object_mut().unwrap().remove("id");
                }
                input.push(sent);
                if item["type"] == "function_call" {
                    input.push(json!({"type": "function_call_output", "call_id": item["call_id"], "output": "no results"}));
                }
            }
        }
        assert!(concluded, "{echo}: the loop is ended with a final answer");
        assert!(runs.windows(2).all(|w| w[0] == w[1]), "{echo}: one conversation throughout: {runs:?}");
        // The recording holds each call once, with its result, for the audit (written behind
        // the answers: complete once the gateway has stopped).
        running.stop().await;
        let recording =
            std::fs::read_to_string(recordings.path().join(format!("{}.jsonl", runs[0]))).unwrap();
        let lines: Vec<Value> = recording.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let calls = lines.iter().filter(|l| l.get("tool_calls").is_some()).count();
        let results = lines.iter().filter(|l| l["role"] == "tool").count();
        assert_eq!((calls, results), (runs.len() - 1, runs.len() - 1), "{echo}: {recording}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replys_items_are_kept_for_references_only_when_store_is_on() {
    // With `store: false` the API refuses item references, so the reply's items (a reasoning
    // model's can be large) are not kept with the conversation's state.
    use looprail_journal::RunStore;
    for store_on in [true, false] {
        let upstream = looping_upstream(reason_and_search).await;
        let store = common::TempStore::new("referable");
        let gw = common::sdk::gateway(&store, &upstream.url, Default::default(), 0).await;
        let body = json!({"model": "gpt-x", "input": [{"role": "user", "content": "Find the report"}],
            "tools": [{"type": "function", "name": "search", "parameters": {"type": "object"}}], "store": store_on});
        let (status, _, run) = post(&gw.url, &body).await;
        assert_eq!(status, 200);
        gw.stop().await;
        let sqlite = looprail_journal::SqliteStore::open(&store).await.unwrap();
        let key = looprail_gateway::identity::state_key(&run.unwrap());
        let state = sqlite.load_journal(&key).await.unwrap().unwrap();
        let kept: Vec<&str> =
            state["reply_items"].as_array().into_iter().flatten().filter_map(|i| i["id"].as_str()).collect();
        let expected: &[&str] = if store_on { &["rs_0", "msg_0", "fc_0"] } else { &[] };
        assert_eq!(kept, expected, "store {store_on}");
    }
}
