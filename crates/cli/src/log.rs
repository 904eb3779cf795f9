//! What the long-running commands (`looprail gateway`, `looprail worker`) tell their operator
//! on stderr: warnings and errors (a store that cannot be read or written, a fallback model, a
//! stream that ended early), one line each, unless OpenTelemetry export took the events
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`). `LOOPRAIL_LOG` sets the level: `off`, `error`, `warn`
//! (default), `info`, `debug`.

use tracing::level_filters::LevelFilter;

/// The level `LOOPRAIL_LOG` asks for (warnings when unset); a value that is no level is an
/// error naming it.
fn level() -> Result<LevelFilter, String> {
    let Ok(value) = std::env::var("LOOPRAIL_LOG") else { return Ok(LevelFilter::WARN) };
    match value.trim().to_ascii_lowercase().as_str() {
        "off" => Ok(LevelFilter::OFF),
        "error" => Ok(LevelFilter::ERROR),
        "" | "warn" | "warning" => Ok(LevelFilter::WARN),
        "info" => Ok(LevelFilter::INFO),
        "debug" => Ok(LevelFilter::DEBUG),
        "trace" => Ok(LevelFilter::TRACE),
        _ => Err(format!("LOOPRAIL_LOG: `{value}` is not a level (off, error, warn, info, debug)")),
    }
}

/// Writes events at `LOOPRAIL_LOG`'s level to stderr, unless a subscriber (OpenTelemetry's) is
/// installed already.
pub fn to_stderr() -> Result<(), String> {
    let level = level()?;
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_max_level(level)
        .try_init();
    Ok(())
}
