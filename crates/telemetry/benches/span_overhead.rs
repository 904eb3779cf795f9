//! What looprail's telemetry costs per agent turn (one `chat` span with its usage recorded, one
//! `execute_tool` span, one named event): with no subscriber, and with the OpenTelemetry and
//! metrics layers installed (an SDK tracer and meter with no exporter, so the figure is the
//! layers' own work, not the network). Target: under 10 µs a turn.

#![allow(clippy::unwrap_used, missing_docs)]

use divan::Bencher;
use looprail_loop_core::provider::{CallPurpose, ModelResponse};
use looprail_loop_core::telemetry::{chat_span, record_model_result, tool_span};
use looprail_telemetry::MetricsLayer;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use tracing_subscriber::layer::SubscriberExt;

fn main() {
    divan::main();
}

fn turn(response: &Result<ModelResponse, looprail_loop_core::provider::ProviderError>) {
    let chat = chat_span("openai", "gpt-4o", CallPurpose::Turn);
    {
        let _entered = chat.enter();
        record_model_result(&chat, response);
    }
    drop(chat);
    let tool = tool_span("read_file", "call_abc123", "lr-0");
    {
        let _entered = tool.enter();
        tracing::info!(name: "agent.tool.retry", target: "looprail", payload = "{\"tool\":\"read_file\"}");
    }
    drop(tool);
}

fn response() -> Result<ModelResponse, looprail_loop_core::provider::ProviderError> {
    Ok(ModelResponse::text("gpt-4o-2024-08-06", "done").with_usage(1200, 80))
}

#[divan::bench]
fn turn_without_subscriber(bencher: Bencher) {
    let response = response();
    bencher.bench_local(|| turn(&response));
}

#[divan::bench]
fn turn_with_otel_layers(bencher: Bencher) {
    let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let meter = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(tracer.tracer("bench")))
        .with(MetricsLayer::new(&meter.meter("bench")));
    let dispatch = tracing::Dispatch::new(subscriber);
    let response = response();
    tracing::dispatcher::with_default(&dispatch, || bencher.bench_local(|| turn(&response)));
}
