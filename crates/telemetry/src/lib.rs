//! OpenTelemetry export for looprail: the GenAI-convention spans the engine emits through
//! `tracing` (`invoke_agent`, `chat`, `execute_tool`, see `looprail_loop_core::telemetry`)
//! sent over OTLP/HTTP, and metrics derived from them:
//!
//! | metric | kind, unit | attributes |
//! |---|---|---|
//! | `gen_ai.client.operation.duration` | histogram, s | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `error.type` |
//! | `gen_ai.client.token.usage` | histogram, {token} | the same, and `gen_ai.token.type` (`input`, `output`) |
//! | `looprail.tool.duration` | histogram, s | `gen_ai.tool.name`, `error.type` |
//! | `looprail.events` | counter | `event.name` (`agent.loop.detected`, `agent.model.retry`, `agent_run.completed`, ...), and `looprail.detector`, `looprail.level`, `looprail.guard`, `looprail.action` when the event has them |
//!
//! Configuration is OpenTelemetry's own environment: nothing is exported unless
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is set; `OTEL_EXPORTER_OTLP_PROTOCOL` is
//! `http/protobuf` (default) or `http/json`; `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`
//! and `OTEL_SDK_DISABLED` work as specified. Dropping the returned [`Telemetry`] flushes
//! everything (a process must keep it until its work is done).
//!
//! ```
//! let config = looprail_telemetry::OtlpConfig::from_vars(|name| match name {
//!     "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:4318".to_owned()),
//!     "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("http/json".to_owned()),
//!     _ => None,
//! })?;
//! let config = config.expect("an endpoint is set");
//! assert_eq!(config.protocol, looprail_telemetry::Protocol::HttpJson);
//! assert_eq!(config.service_name, "looprail");
//! # Ok::<(), looprail_telemetry::TelemetryError>(())
//! ```

mod config;
pub mod conventions;
mod metrics;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub use config::{OtlpConfig, Protocol};
pub use metrics::MetricsLayer;

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// An `OTEL_*` variable has a value this build does not support.
    #[error("{name}={value}: {reason}")]
    BadVariable {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is supported.
        reason: &'static str,
    },
    /// The exporter could not be built.
    #[error("OpenTelemetry exporter: {0}")]
    Exporter(String),
    /// Another global `tracing` subscriber was installed first.
    #[error("a tracing subscriber is already installed: {0}")]
    AlreadyInstalled(String),
}

/// The installed exporters; dropping it flushes and shuts them down.
#[derive(Debug)]
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

impl Telemetry {
    /// Flushes spans and metrics now and stops exporting (also done on drop).
    pub fn shutdown(&self) {
        if let Err(error) = self.tracer.force_flush() {
            eprintln!("telemetry: flushing spans failed: {error}");
        }
        if let Err(error) = self.meter.force_flush() {
            eprintln!("telemetry: flushing metrics failed: {error}");
        }
        let _ = self.tracer.shutdown();
        let _ = self.meter.shutdown();
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The crates whose spans and events are exported (at INFO and above).
const TARGETS: &[&str] = &[
    "looprail",
    "looprail_loop_core",
    "looprail_journal",
    "looprail_providers",
    "looprail_retry",
    "looprail_guardrails",
    "looprail_compaction",
    "looprail_rag_dedup",
];

/// Installs export as the environment asks ([`OtlpConfig::from_env`]); `None` when it asks for
/// none. Call it outside any async runtime (the exporters start their own threads).
pub fn install_from_env() -> Result<Option<Telemetry>, TelemetryError> {
    OtlpConfig::from_env()?.map(|config| install(&config)).transpose()
}

/// Installs the global `tracing` subscriber exporting looprail's spans and metrics to
/// `config`'s endpoint.
pub fn install(config: &OtlpConfig) -> Result<Telemetry, TelemetryError> {
    // The exporters' HTTP client needs a TLS provider even for plain-HTTP endpoints: ring, as
    // everywhere in looprail (a provider installed before is kept).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = config.protocol.otlp();
    let resource = Resource::builder().with_service_name(config.service_name.clone()).build();
    let mut spans = SpanExporter::builder().with_http().with_protocol(protocol);
    if let Some(endpoint) = &config.traces_endpoint {
        spans = spans.with_endpoint(endpoint);
    }
    let spans = spans.build().map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let mut metrics = MetricExporter::builder().with_http().with_protocol(protocol);
    if let Some(endpoint) = &config.metrics_endpoint {
        metrics = metrics.with_endpoint(endpoint);
    }
    let metrics = metrics.build().map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let tracer = SdkTracerProvider::builder()
        .with_batch_exporter(conventions::Conventional::new(spans))
        .with_resource(resource.clone())
        .build();
    let meter = SdkMeterProvider::builder().with_periodic_exporter(metrics).with_resource(resource).build();
    let filter = TARGETS.iter().fold(tracing_subscriber::filter::Targets::new(), |f, target| {
        f.with_target(*target, tracing::Level::INFO)
    });
    tracing_subscriber::registry()
        .with(
            tracing_opentelemetry::layer().with_tracer(tracer.tracer("looprail")).with_filter(filter.clone()),
        )
        .with(MetricsLayer::new(&meter.meter("looprail")).with_filter(filter))
        .try_init()
        .map_err(|e| TelemetryError::AlreadyInstalled(e.to_string()))?;
    Ok(Telemetry { tracer, meter })
}

use tracing_subscriber::Layer as _;
