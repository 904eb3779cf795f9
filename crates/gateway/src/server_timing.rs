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
        let value = format!("gateway;dur={:.3}, upstream;dur={:.3}", millis(gateway), millis(upstream));
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(SERVER_TIMING.clone(), value);
        }
        response
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
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
