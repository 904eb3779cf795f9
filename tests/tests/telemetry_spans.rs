//! The spans of a run follow the OpenTelemetry GenAI conventions (issue 18): `invoke_agent`
//! around `chat` and `execute_tool`, with the conventions' attribute names, and failures as
//! `error.type` with an error status.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::event::Event;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
use looprail_loop_core::tool::ToolErrorKind;
use looprail_tests::drive;
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Default)]
struct Recorded {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Recorded>>>, Arc<Mutex<BTreeMap<u64, usize>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut span = Recorded { name: attrs.metadata().name().to_owned(), ..Recorded::default() };
        span.parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.name().to_owned());
        attrs.record(&mut Fields(&mut span.fields));
        let mut all = self.0.lock().unwrap();
        self.1.lock().unwrap().insert(id.into_u64(), all.len());
        all.push(span);
    }
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let name = event.metadata().name().to_owned();
        self.0.lock().unwrap().push(Recorded { name: format!("event:{name}"), ..Recorded::default() });
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let index = self.1.lock().unwrap().get(&id.into_u64()).copied();
        if let Some(index) = index {
            values.record(&mut Fields(&mut self.0.lock().unwrap()[index].fields));
        }
    }
}

#[tokio::test]
async fn a_run_is_an_invoke_agent_span_around_chat_and_execute_tool_spans() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    let provider = ScriptedProvider::new("gpt-test")
        .call_tool("search", r#"{"q": "flights"}"#)
        .call_tool("book", r#"{"id": 7}"#)
        .reply_text("Booked.");
    let tools = ToolSet::new()
        .with(RecordingTool::new("search").output("two flights"))
        .with(RecordingTool::new("book").fail_times(1, ToolErrorKind::Failed));
    let mut run =
        Run::builder(LoopConfig::default()).user("Book a flight").tools(tools.definitions()).build().unwrap();
    let recorded = drive(&mut run, Driver::new(Arc::new(provider), tools)).await;
    assert_eq!(recorded.outcome.state, RunState::Completed);

    let all = spans.0.lock().unwrap().clone();
    let named = |name: &str| all.iter().filter(|s| s.name == name).cloned().collect::<Vec<_>>();
    let agent = named("invoke_agent");
    assert_eq!(agent.len(), 1);
    assert_eq!(agent[0].fields["gen_ai.operation.name"], "invoke_agent");
    let chats = named("chat");
    assert_eq!(chats.len(), 3, "one per model call");
    for chat in &chats {
        assert_eq!(chat.parent.as_deref(), Some("invoke_agent"));
        assert_eq!(chat.fields["gen_ai.operation.name"], "chat");
        assert_eq!(chat.fields["gen_ai.request.model"], "gpt-test");
        assert_eq!(chat.fields["gen_ai.response.model"], "gpt-test");
        assert_eq!(chat.fields["gen_ai.usage.input_tokens"], "100");
        assert_eq!(chat.fields["gen_ai.usage.output_tokens"], "20");
        assert!(chat.fields.contains_key("gen_ai.provider.name"));
    }
    assert_eq!(chats[0].fields["gen_ai.response.finish_reasons"], "tool_calls");
    assert!(chats.iter().all(|c| c.fields["otel.kind"] == "client"), "a model call is a CLIENT span");
    assert_eq!(chats[2].fields["gen_ai.response.finish_reasons"], "stop");
    let tools = named("execute_tool");
    assert_eq!(tools.len(), 2);
    for tool in &tools {
        assert_eq!(tool.parent.as_deref(), Some("invoke_agent"));
        assert_eq!(tool.fields["gen_ai.operation.name"], "execute_tool");
        // The model's id for the call (the provider's logs know it), and the engine's own.
        assert!(!tool.fields["gen_ai.tool.call.id"].starts_with("lr-"), "{:?}", tool.fields);
        assert!(tool.fields["looprail.tool.call.id"].starts_with("lr-"));
        assert!(!tool.fields.contains_key("otel.kind"), "a tool runs in process: INTERNAL");
    }
    assert_eq!(tools[0].fields["gen_ai.tool.name"], "search");
    assert!(!tools[0].fields.contains_key("error.type"));
    assert_eq!(tools[1].fields["gen_ai.tool.name"], "book");
    assert_eq!(tools[1].fields["error.type"], "failed");
    assert_eq!(tools[1].fields["otel.status_code"], "ERROR");
    // No message content is recorded.
    let everything = format!("{all:?}");
    assert!(!everything.contains("Book a flight") && !everything.contains("two flights"));
}

#[test]
fn every_seed_event_is_traced_under_its_stable_name() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let events = [
        Event::ModelRetry { model: "m".into(), attempt: 2, delay_ms: 500, cause: "overloaded".into() },
        Event::ModelFallback { from: "a".into(), to: "b".into(), cause: "down".into() },
        Event::ChunksDeduplicated { call_id: "lr-0".into(), kept: 3, duplicates: 2 },
        Event::RunReconcile { timed_out: 1, resumable: 1, cancelled: 0 },
        Event::DispatchNextFailed { lane: "l".into(), cause: "x".into() },
        Event::RunResumeUnsafe {
            run_id: "r".into(),
            call_id: String::new(),
            reason: "system_prompt_changed".into(),
        },
    ];
    for event in &events {
        event.trace();
    }
    let traced: Vec<String> = spans.0.lock().unwrap().iter().map(|s| s.name.clone()).collect();
    let expected: Vec<String> = events.iter().map(|e| format!("event:{}", e.name())).collect();
    assert_eq!(traced, expected);
}
