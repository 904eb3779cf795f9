//! What `tracing` cannot say, put right on the way out: the GenAI conventions type
//! `gen_ai.response.finish_reasons` as a string array, and a `tracing` field holds one string
//! (the reasons joined by `,`). [`Conventional`] wraps the OTLP exporter and sends that
//! attribute as the array.

use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// The attributes the conventions type as string arrays.
const STRING_ARRAYS: &[&str] = &["gen_ai.response.finish_reasons"];

/// A span exporter that types the string-array attributes as arrays before `inner` sends them.
#[derive(Debug)]
pub struct Conventional<E> {
    inner: E,
}

impl<E> Conventional<E> {
    /// Wraps `inner`.
    pub fn new(inner: E) -> Self {
        Self { inner }
    }
}

/// `attribute` as the conventions type it: a string-array attribute recorded as one string
/// (the values joined by `,`) becomes the array; anything else is unchanged.
///
/// ```
/// use opentelemetry::{Array, KeyValue, StringValue, Value};
/// use looprail_telemetry::conventions::typed;
///
/// let reasons = typed(KeyValue::new("gen_ai.response.finish_reasons", "stop"));
/// assert_eq!(reasons.value, Value::Array(Array::String(vec![StringValue::from("stop")])));
/// let model = typed(KeyValue::new("gen_ai.request.model", "gpt-4o"));
/// assert_eq!(model.value, Value::from("gpt-4o"));
/// ```
pub fn typed(attribute: KeyValue) -> KeyValue {
    if !STRING_ARRAYS.contains(&attribute.key.as_str()) {
        return attribute;
    }
    match &attribute.value {
        Value::String(joined) => {
            let values = joined.as_str().split(',').map(|v| StringValue::from(v.trim().to_owned())).collect();
            KeyValue::new(attribute.key, Value::Array(Array::String(values)))
        }
        _ => attribute,
    }
}

impl<E: SpanExporter> SpanExporter for Conventional<E> {
    fn export(&self, mut batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        for span in &mut batch {
            let attributes = std::mem::take(&mut span.attributes);
            span.attributes = attributes.into_iter().map(typed).collect();
        }
        self.inner.export(batch)
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}
