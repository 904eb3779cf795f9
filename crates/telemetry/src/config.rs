//! The exporter's configuration, read from OpenTelemetry's standard environment variables.

use crate::TelemetryError;

/// How spans and metrics are encoded on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf` (the default).
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

impl Protocol {
    pub(crate) fn otlp(self) -> opentelemetry_otlp::Protocol {
        match self {
            Protocol::HttpProtobuf => opentelemetry_otlp::Protocol::HttpBinary,
            Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
        }
    }
}

/// Where and how to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The encoding.
    pub protocol: Protocol,
    /// `service.name` of the resource.
    pub service_name: String,
    /// A full traces URL (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); otherwise the exporter derives
    /// `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`.
    pub traces_endpoint: Option<String>,
    /// A full metrics URL (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`), likewise.
    pub metrics_endpoint: Option<String>,
}

impl OtlpConfig {
    /// Reads the process environment; `None` when no endpoint is set or `OTEL_SDK_DISABLED` is
    /// `true`.
    pub fn from_env() -> Result<Option<Self>, TelemetryError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads the variables through `var` (for tests and embedding).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TelemetryError> {
        let set = |name: &str| var(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let traces_endpoint = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let metrics_endpoint = set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
        if set("OTEL_EXPORTER_OTLP_ENDPOINT").is_none()
            && traces_endpoint.is_none()
            && metrics_endpoint.is_none()
        {
            return Ok(None);
        }
        let protocol = match set("OTEL_EXPORTER_OTLP_PROTOCOL").as_deref() {
            None | Some("http/protobuf") => Protocol::HttpProtobuf,
            Some("http/json") => Protocol::HttpJson,
            Some(other) => {
                return Err(TelemetryError::BadVariable {
                    name: "OTEL_EXPORTER_OTLP_PROTOCOL",
                    value: other.to_owned(),
                    reason: "this build exports over http/protobuf or http/json (no grpc)",
                });
            }
        };
        Ok(Some(Self {
            protocol,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "looprail".to_owned()),
            traces_endpoint,
            metrics_endpoint,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Option<OtlpConfig>, TelemetryError> {
        let vars: Vec<(String, String)> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        OtlpConfig::from_vars(move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint_or_when_disabled() {
        assert_eq!(read(&[]).unwrap(), None);
        assert_eq!(read(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap(), None);
        let disabled = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SDK_DISABLED", "TRUE")];
        assert_eq!(read(&disabled).unwrap(), None);
    }

    #[test]
    fn protocol_service_and_signal_endpoints_are_read() {
        let config = read(&[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces"),
            ("OTEL_SERVICE_NAME", "agents"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(config.protocol, Protocol::HttpProtobuf);
        assert_eq!(config.service_name, "agents");
        assert_eq!(config.traces_endpoint.as_deref(), Some("http://c:4318/v1/traces"));
        let grpc = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert!(grpc.unwrap_err().to_string().contains("no grpc"));
    }
}
