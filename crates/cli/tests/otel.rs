//! OpenTelemetry export from the binary (issue 18): `looprail run` with the standard OTLP
//! environment sends its GenAI spans and metrics to a local OTLP/HTTP receiver (JSON encoding,
//! so the test reads them as they travel), flushed before the process exits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{json_call, json_text, openai_args, temp_dir};
use looprail_providers::fake::{FakeServer, Reply, Seen};
use serde_json::Value;

/// A span as the receiver got it: name, span id, parent id, attributes (key → value), kind.
type Span = (String, String, String, serde_json::Map<String, Value>, u64);

/// Every span the receiver got.
fn spans(seen: &[Seen]) -> Vec<Span> {
    let mut spans = Vec::new();
    for request in seen.iter().filter(|r| r.path == "/v1/traces") {
        for resource in request.body["resourceSpans"].as_array().into_iter().flatten() {
            let service = attribute(&resource["resource"]["attributes"], "service.name");
            assert_eq!(service, Some(Value::String("looprail-test".into())), "the service is named");
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    let attributes = span["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| (a["key"].as_str().unwrap().to_owned(), value(&a["value"])))
                        .collect();
                    spans.push((
                        span["name"].as_str().unwrap().to_owned(),
                        span["spanId"].as_str().unwrap_or_default().to_owned(),
                        span["parentSpanId"].as_str().unwrap_or_default().to_owned(),
                        attributes,
                        span["kind"].as_u64().unwrap_or_default(),
                    ));
                }
            }
        }
    }
    spans
}

/// An OTLP `AnyValue` as plain JSON (int64 travels as a string in OTLP/JSON).
fn value(any: &Value) -> Value {
    if let Some(s) = any.get("stringValue") {
        return s.clone();
    }
    if let Some(array) = any.pointer("/arrayValue/values").and_then(Value::as_array) {
        return Value::Array(array.iter().map(value).collect());
    }
    if let Some(i) = any.get("intValue") {
        return i.as_str().and_then(|s| s.parse::<i64>().ok()).map_or_else(|| i.clone(), Value::from);
    }
    any.get("boolValue").or_else(|| any.get("doubleValue")).cloned().unwrap_or(Value::Null)
}

fn attribute(attributes: &Value, key: &str) -> Option<Value> {
    attributes.as_array()?.iter().find(|a| a["key"] == key).map(|a| value(&a["value"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_exports_genai_spans_and_metrics_over_otlp() {
    let dir = temp_dir("otel");
    let collector = FakeServer::responding(|_| Reply::json(200, "{}")).await;
    let model = FakeServer::start(vec![
        json_call("c1", "read_file", r#"{"path": "notes.txt"}"#),
        json_text("The meeting is on Thursday."),
    ])
    .await;
    let args = openai_args(&model, &dir, &[], "When is the meeting?");
    let collector_url = collector.url.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_looprail"))
            .args(&args)
            .env("OPENAI_API_KEY", "sk-test")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector_url)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            .env("OTEL_SERVICE_NAME", "looprail-test")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let seen = collector.requests();
    let spans = spans(&seen);
    let find = |name: &str| {
        spans.iter().find(|s| s.0 == name).unwrap_or_else(|| panic!("no span `{name}` in {spans:#?}"))
    };
    let agent = find("invoke_agent looprail");
    let chat = find("chat gpt-4o-mini");
    let tool = find("execute_tool read_file");
    assert_eq!(agent.3["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(chat.3["gen_ai.operation.name"], "chat");
    assert_eq!(chat.3["gen_ai.provider.name"], "openai");
    assert_eq!(chat.3["gen_ai.request.model"], "gpt-4o-mini");
    assert_eq!(chat.3["gen_ai.usage.input_tokens"], 10);
    assert_eq!(chat.3["gen_ai.usage.output_tokens"], 5);
    assert!(chat.3.contains_key("gen_ai.response.model"));
    // The conventions' types: finish reasons a string array, the model call a CLIENT span (3 in
    // OTLP), a tool's an INTERNAL one (1).
    assert_eq!(chat.3["gen_ai.response.finish_reasons"], serde_json::json!(["tool_calls"]));
    assert_eq!((chat.4, agent.4, tool.4), (3, 1, 1), "span kinds: chat CLIENT, the others INTERNAL");
    assert_eq!(tool.3["gen_ai.tool.name"], "read_file");
    // The tool call's id is the one the model sent, so the trace joins the provider's logs; the
    // engine's own id has an attribute of its own.
    assert_eq!(tool.3["gen_ai.tool.call.id"], "c1");
    assert!(tool.3["looprail.tool.call.id"].as_str().is_some_and(|id| id.starts_with("lr-")), "{:?}", tool.3);
    assert_eq!(chat.2, agent.1, "chat is a child of invoke_agent");
    assert_eq!(spans.iter().filter(|s| s.0.starts_with("chat ")).count(), 2, "one chat span per model call");

    let metrics: Vec<String> = seen
        .iter()
        .filter(|r| r.path == "/v1/metrics")
        .flat_map(|r| r.body["resourceMetrics"].as_array().cloned().unwrap_or_default())
        .flat_map(|r| r["scopeMetrics"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["metrics"].as_array().cloned().unwrap_or_default())
        .map(|m| m["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    for name in [
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "looprail.tool.duration",
        "looprail.events",
    ] {
        assert!(metrics.iter().any(|m| m == name), "no metric `{name}` in {metrics:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_otlp_protocol_is_one_clear_error() {
    let out = tokio::task::spawn_blocking(|| {
        std::process::Command::new(env!("CARGO_BIN_EXE_looprail"))
            .args(["runs", "--store", "/nonexistent/x.db"])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"), "{stderr}");
}
