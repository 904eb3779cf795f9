//! [`MetricsLayer`]: metrics derived from looprail's spans and events as they close, so the
//! libraries only emit `tracing` data and the metric names live in one place.

use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// Records `gen_ai.client.operation.duration` and `gen_ai.client.token.usage` for every `chat`
/// span, `looprail.tool.duration` for every `execute_tool` span and `looprail.events` for every
/// named looprail event.
#[derive(Debug, Clone)]
pub struct MetricsLayer {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    tool_duration: Histogram<f64>,
    events: Counter<u64>,
}

impl MetricsLayer {
    /// The instruments, created on `meter`.
    pub fn new(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .build(),
            tool_duration: meter
                .f64_histogram("looprail.tool.duration")
                .with_unit("s")
                .with_description("Tool call attempt duration")
                .build(),
            events: meter.u64_counter("looprail.events").with_description("looprail events, by name").build(),
        }
    }
}

/// What a measured span recorded.
#[derive(Debug, Default)]
struct Measured {
    started: Option<Instant>,
    operation: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    tool: Option<String>,
    error_type: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    event: Option<String>,
    payload: Option<String>,
}

impl Visit for Measured {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "gen_ai.operation.name" => &mut self.operation,
            "gen_ai.provider.name" => &mut self.provider,
            "gen_ai.request.model" => &mut self.model,
            "gen_ai.tool.name" => &mut self.tool,
            "error.type" => &mut self.error_type,
            "event" => &mut self.event,
            "payload" => &mut self.payload,
            _ => return,
        };
        *slot = Some(value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input_tokens = Some(value),
            "gen_ai.usage.output_tokens" => self.output_tokens = Some(value),
            _ => {}
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // Strings recorded through `%` or `?` arrive here.
        self.record_str(field, format!("{value:?}").trim_matches('"'));
    }
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !matches!(attrs.metadata().name(), "chat" | "execute_tool") {
            return;
        }
        let mut measured = Measured { started: Some(Instant::now()), ..Measured::default() };
        attrs.record(&mut measured);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(measured);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(measured) = span.extensions_mut().get_mut::<Measured>()
        {
            values.record(measured);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(measured) = span.extensions_mut().remove::<Measured>() else { return };
        let seconds = measured.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        let error = measured.error_type.clone();
        if span.name() == "execute_tool" {
            let mut attributes = vec![KeyValue::new("gen_ai.tool.name", measured.tool.unwrap_or_default())];
            attributes.extend(error.map(|e| KeyValue::new("error.type", e)));
            self.tool_duration.record(seconds, &attributes);
            return;
        }
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", measured.operation.unwrap_or_else(|| "chat".to_owned())),
            KeyValue::new("gen_ai.provider.name", measured.provider.unwrap_or_default()),
            KeyValue::new("gen_ai.request.model", measured.model.unwrap_or_default()),
        ];
        attributes.extend(error.map(|e| KeyValue::new("error.type", e)));
        self.duration.record(seconds, &attributes);
        for (kind, count) in [("input", measured.input_tokens), ("output", measured.output_tokens)] {
            if let Some(count) = count {
                let mut with_type = attributes.clone();
                with_type.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(count, &with_type);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut measured = Measured::default();
        event.record(&mut measured);
        let name = event.metadata().name();
        let name = if name.starts_with("agent") || name == "limits_reached" {
            name.to_owned()
        } else {
            match measured.event {
                Some(name) => name,
                None => return,
            }
        };
        let mut attributes = vec![KeyValue::new("event.name", name)];
        attributes.extend(low_cardinality(measured.payload.as_deref()));
        self.events.add(1, &attributes);
    }
}

/// The payload fields worth a metric dimension (few values each): which detector or guard, at
/// which ladder level or action. Loop detections are then countable by detector and level.
fn low_cardinality(payload: Option<&str>) -> Vec<KeyValue> {
    let Some(value) = payload.and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok()) else {
        return Vec::new();
    };
    // An event serialises as its fields, possibly under its variant's name.
    let fields = match &value {
        serde_json::Value::Object(map) if map.len() == 1 => map.values().next().cloned().unwrap_or_default(),
        other => other.clone(),
    };
    ["detector", "level", "guard", "action"]
        .iter()
        .filter_map(|key| {
            let found = fields.get(*key).or_else(|| value.get(*key))?.as_str()?;
            Some(KeyValue::new(format!("looprail.{key}"), found.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::low_cardinality;

    #[test]
    fn loop_detections_are_counted_by_detector_and_level() {
        let tagged =
            r#"{"type": "loop_detected", "detector": "identical", "level": "nudge", "tool": "search"}"#;
        let keys: Vec<String> =
            low_cardinality(Some(tagged)).iter().map(|kv| format!("{}={}", kv.key, kv.value)).collect();
        assert_eq!(keys, ["looprail.detector=identical", "looprail.level=nudge"]);
        let nested = r#"{"LoopDetected": {"detector": "cycle", "level": "directive"}}"#;
        assert_eq!(low_cardinality(Some(nested)).len(), 2);
        assert!(low_cardinality(Some("not json")).is_empty());
    }
}
