//! The `Server-Timing` header of a forwarded answer: the upstream's time and the gateway's own,
//! apart, read by a plain HTTP client from a gateway in front of an upstream that takes its time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use looprail_gateway::GatewayConfig;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::json;

/// How long the upstream waits before it answers.
const UPSTREAM_WAIT: Duration = Duration::from_millis(300);

/// The header's metrics, by name, in milliseconds.
fn metrics(response: &reqwest::Response) -> Vec<(String, f64)> {
    let value = response.headers().get("server-timing").expect("a server-timing header").to_str().unwrap();
    value
        .split(',')
        .map(|metric| {
            let (name, dur) = metric.trim().split_once(";dur=").unwrap_or_else(|| panic!("{value}"));
            (name.to_owned(), dur.parse().unwrap_or_else(|_| panic!("{value}")))
        })
        .collect()
}

/// Sends `body` and checks that the upstream's wait is in its metric, not the gateway's, and
/// that the two add up to no more than the client waited for the answer's head.
async fn timed(url: &str, body: serde_json::Value) {
    let sent = Instant::now();
    let response = common::post_json(&reqwest::Client::new(), url, &body).await;
    let waited = sent.elapsed().as_secs_f64() * 1e3;
    assert_eq!(response.status(), 200);
    let metrics = metrics(&response);
    let names: Vec<&str> = metrics.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["gateway", "upstream"]);
    let (gateway, upstream) = (metrics[0].1, metrics[1].1);
    let wait = UPSTREAM_WAIT.as_secs_f64() * 1e3;
    assert!(upstream >= wait, "the upstream's {upstream} ms hold its {wait} ms wait");
    assert!(gateway >= 0.0 && gateway < upstream, "the gateway's {gateway} ms leave the upstream's wait out");
    assert!(gateway + upstream <= waited + 0.01, "{gateway} + {upstream} ms within the client's {waited} ms");
    response.bytes().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_answer_tells_the_gateways_time_from_the_upstreams() {
    let reply = json!({"id": "r", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "done"}}]});
    let events = [
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"done\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ];
    let upstream = FakeServer::responding(move |request| {
        let reply = if request["stream"] == true {
            Reply::sse_events(&events)
        } else {
            Reply::json(200, &reply.to_string())
        };
        reply.after(UPSTREAM_WAIT)
    })
    .await;
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.url.clone();
    settings.upstream.openai_key = None;
    let gateway = common::serve(settings, "server-timing").await;
    let url = format!("{gateway}/v1/chat/completions");
    let ask = |stream: bool| json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
    // Read whole, and relayed as a stream (the upstream's time then ends at its head).
    timed(&url, ask(false)).await;
    timed(&url, ask(true)).await;
    assert_eq!(upstream.requests().len(), 2);
}

/// An upstream that sends its whole stream at once has it relayed whole: every event, in order,
/// byte for byte (the first one may leave alone, the rest follow).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_arrives_at_once_is_relayed_whole() {
    let events = [
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"do\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ne\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    ];
    let upstream = FakeServer::responding(move |_| Reply::sse_events(&events)).await;
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.url.clone();
    settings.upstream.openai_key = None;
    let gateway = common::serve(settings, "stream-at-once").await;
    let client = reqwest::Client::new();
    for n in 0..20 {
        let ask = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": format!("task {n}")}]});
        let response = common::post_json(&client, &format!("{gateway}/v1/chat/completions"), &ask).await;
        let body = response.text().await.unwrap();
        assert_eq!(body, events.concat(), "request {n}");
    }
}
