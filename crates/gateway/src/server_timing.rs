//! The `Server-Timing` header of a forwarded answer (W3C Server Timing): how long the gateway
//! itself worked on the request and how long the upstream took, so a client (or a benchmark)
//! can tell the gateway's cost from the model's, request by request, as Kong's
//! `X-Kong-Proxy-Latency` and Envoy's `x-envoy-upstream-service-time` let one.
//!
//! `server-timing: gateway;dur=0.182, upstream;dur=812.406` (milliseconds):
//!
//! - `upstream`: from the request's send to the upstream's answer: its whole body when the
//!   gateway reads it whole, its head when it relays a stream. Retries, their waits and the
//!   fallback models count here.
//! - `gateway`: the rest of the request's time in the gateway, from its body read to the
//!   answer's head: reading the request and its conversation, the guards, a summary call when
//!   compaction runs, and, for an answer read whole, the work on it before it goes out (the save
//!   too, when it is made before the answer). A relayed stream's own work on each event comes
//!   after the head and is not in it.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Response};

/// The header's name.
static SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// When a request arrived and when its upstream call started and ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    arrived: Instant,
    sent: Option<Instant>,
    answered: Option<Instant>,
}

impl Timing {
    /// A request that arrived now.
    pub(crate) fn start() -> Self {
        Self { arrived: Instant::now(), sent: None, answered: None }
    }

    /// Its upstream call starts now.
    pub(crate) fn sent(&mut self) {
        self.sent = Some(Instant::now());
    }

    /// The upstream has answered (the body read, or a stream's head).
    pub(crate) fn answered(&mut self) {
        self.answered = Some(Instant::now());
    }

    /// The two durations when the answer's head goes out now: the gateway's own and the
    /// upstream's (zero for a call not made or not answered).
    fn split(&self, now: Instant) -> (Duration, Duration) {
        let (Some(sent), Some(answered)) = (self.sent, self.answered) else {
            return (now.saturating_duration_since(self.arrived), Duration::ZERO);
        };
        let upstream = answered.saturating_duration_since(sent);
        let gateway = sent.saturating_duration_since(self.arrived) + now.saturating_duration_since(answered);
        (gateway, upstream)
    }

    /// Adds the header to `response`, whose head goes out now.
    pub(crate) fn stamp(&self, mut response: Response<Body>) -> Response<Body> {
        let (gateway, upstream) = self.split(Instant::now());
        let mut value = String::with_capacity(48);
        value.push_str("gateway;dur=");
        push_millis(&mut value, gateway);
        value.push_str(", upstream;dur=");
        push_millis(&mut value, upstream);
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(SERVER_TIMING.clone(), value);
        }
        response
    }
}

/// Writes `duration` in milliseconds with three decimals, rounded to the nearest microsecond
/// (integers: a float's formatting to a precision was most of the header's cost).
fn push_millis(out: &mut String, duration: Duration) {
    use std::fmt::Write as _;
    let micros = duration.as_nanos().saturating_add(500) / 1_000;
    let _ = write!(out, "{}.{:03}", micros / 1_000, micros % 1_000);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_has_the_time_around_the_upstream_call_and_the_upstream_the_time_inside_it() {
        let arrived = Instant::now();
        let at = |ms: u64| arrived + Duration::from_millis(ms);
        let timing = Timing { arrived, sent: Some(at(2)), answered: Some(at(50)) };
        assert_eq!(timing.split(at(53)), (Duration::from_millis(5), Duration::from_millis(48)));
        // No call made (or none answered): all of it is the gateway's.
        let unsent = Timing { arrived, sent: None, answered: None };
        assert_eq!(unsent.split(at(7)), (Duration::from_millis(7), Duration::ZERO));
    }

    #[test]
    fn a_duration_is_written_in_milliseconds_to_the_nearest_microsecond() {
        let written = |duration| {
            let mut out = String::new();
            push_millis(&mut out, duration);
            out
        };
        assert_eq!(written(Duration::ZERO), "0.000");
        assert_eq!(written(Duration::from_nanos(499)), "0.000");
        assert_eq!(written(Duration::from_nanos(500)), "0.001");
        assert_eq!(written(Duration::from_micros(182)), "0.182");
        assert_eq!(written(Duration::from_nanos(812_405_600)), "812.406");
        assert_eq!(written(Duration::from_secs(3_600)), "3600000.000");
    }

    #[test]
    fn the_header_reads_as_two_metrics_in_milliseconds() {
        let mut timing = Timing::start();
        timing.sent();
        timing.answered();
        let response = timing.stamp(Response::new(Body::empty()));
        let value = response.headers()["server-timing"].to_str().unwrap().to_owned();
        let metrics: Vec<(&str, f64)> = value
            .split(", ")
            .map(|metric| {
                let (name, dur) = metric.split_once(";dur=").unwrap();
                (name, dur.parse().unwrap())
            })
            .collect();
        assert_eq!(metrics.iter().map(|(name, _)| *name).collect::<Vec<_>>(), ["gateway", "upstream"]);
        assert!(metrics.iter().all(|(_, dur)| *dur >= 0.0 && *dur < 1_000.0), "{value}");
    }
}
