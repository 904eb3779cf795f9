//! The figures: one row per (system, API, stream, load), added latency against the upstream
//! direct at the same load, written as JSON and printed as a table, and the targets
//! checked on them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::load::Sample;

/// A load, as rows name it.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Load {
    /// One client, one request at a time.
    Sequential,
    /// An open loop at this many requests per second.
    Open(f64),
    /// A closed loop of this many clients (the highest rate the system sustains).
    Max(usize),
}

/// Percentiles of one time (first or last byte) over the answered requests, in milliseconds.
#[derive(Clone, Copy, Default, Debug)]
pub struct Spread {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Spread {
    fn of(mut times: Vec<Duration>) -> Option<Self> {
        if times.is_empty() {
            return None;
        }
        times.sort_unstable();
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
        Some(Self { p50: at(0.50), p90: at(0.90), p99: at(0.99) })
    }

    fn minus(self, direct: Self) -> Self {
        Self { p50: self.p50 - direct.p50, p90: self.p90 - direct.p90, p99: self.p99 - direct.p99 }
    }
}

/// One measured row.
#[derive(Clone, Debug)]
pub struct Row {
    /// direct, nginx, litellm or looprail.
    pub system: &'static str,
    /// openai or anthropic.
    pub api: &'static str,
    /// Streamed replies.
    pub stream: bool,
    /// The load.
    pub load: Load,
    /// Requests sent.
    pub requests: usize,
    /// Answered requests per second.
    pub achieved_rps: f64,
    /// Failed requests.
    pub errors: usize,
    /// Until the last byte.
    pub last: Option<Spread>,
    /// Until the first byte.
    pub first: Option<Spread>,
    /// `last` minus the direct upstream's at the same load.
    pub added: Option<Spread>,
    /// `first` minus the direct upstream's at the same load.
    pub added_first: Option<Spread>,
    /// The system's own time by its `server-timing` header (looprail's `gateway` metric: from
    /// the request's body read to the answer's head, the upstream's time left out).
    pub own: Option<Spread>,
    /// The upstream's time as the system saw it (the header's `upstream` metric: from the
    /// request's send to the answer read, or a stream's head).
    pub seen_upstream: Option<Spread>,
    /// CPU milliseconds the system's processes used per request (`None` for the upstream,
    /// which runs in the load generator's process).
    pub cpu_per_request: Option<f64>,
    /// Why the system has no figures.
    pub unavailable: Option<String>,
}

impl Row {
    /// The row of `samples` measured at `load`.
    pub fn measured(
        system: &'static str,
        api: &'static str,
        stream: bool,
        load: Load,
        samples: &[Sample],
        rate: f64,
    ) -> Self {
        let answered: Vec<&Sample> = samples.iter().filter(|s| !s.failed).collect();
        Self {
            system,
            api,
            stream,
            load,
            requests: samples.len(),
            achieved_rps: rate,
            errors: samples.len() - answered.len(),
            last: Spread::of(answered.iter().map(|s| s.last).collect()),
            first: Spread::of(answered.iter().map(|s| s.first).collect()),
            added: None,
            added_first: None,
            own: Spread::of(answered.iter().filter_map(|s| s.own).collect()),
            seen_upstream: Spread::of(answered.iter().filter_map(|s| s.seen_upstream).collect()),
            cpu_per_request: None,
            unavailable: None,
        }
    }

    /// A row for a system that could not be measured.
    pub fn unavailable(
        system: &'static str,
        api: &'static str,
        stream: bool,
        load: Load,
        reason: &str,
    ) -> Self {
        let mut row = Self::measured(system, api, stream, load, &[], 0.0);
        row.unavailable = Some(reason.to_owned());
        row
    }

    /// Fills the added times from the direct row of the same cell.
    pub fn against(&mut self, direct: &Row) {
        if let (Some(own), Some(base)) = (self.last, direct.last) {
            self.added = Some(own.minus(base));
        }
        if let (Some(own), Some(base)) = (self.first, direct.first) {
            self.added_first = Some(own.minus(base));
        }
    }

    /// The row as JSON (milliseconds; `offered_rps` null for the one-client and the closed loop).
    pub fn json(&self, cores: usize) -> Value {
        let ms = |v: Option<f64>| v.map(|v| (v * 1_000.0).round() / 1_000.0);
        let (load, offered, clients) = match self.load {
            Load::Sequential => ("sequential", None, Some(1)),
            Load::Open(rps) => ("open", Some(rps), None),
            Load::Max(clients) => ("max", None, Some(clients)),
        };
        let mut row = json!({
            "system": self.system, "api": self.api, "stream": self.stream, "load": load,
            "offered_rps": offered, "clients": clients, "requests": self.requests,
            "achieved_rps": (self.achieved_rps * 10.0).round() / 10.0, "errors": self.errors,
            "p50_ms": ms(self.last.map(|s| s.p50)), "p90_ms": ms(self.last.map(|s| s.p90)),
            "p99_ms": ms(self.last.map(|s| s.p99)),
            "added_p50_ms": ms(self.added.map(|s| s.p50)), "added_p90_ms": ms(self.added.map(|s| s.p90)),
            "added_p99_ms": ms(self.added.map(|s| s.p99)), "cpu_ms_per_request": ms(self.cpu_per_request),
            "cores": cores,
        });
        if self.stream {
            row["ttfb_p50_ms"] = json!(ms(self.first.map(|s| s.p50)));
            row["added_ttfb_p50_ms"] = json!(ms(self.added_first.map(|s| s.p50)));
            row["added_ttfb_p90_ms"] = json!(ms(self.added_first.map(|s| s.p90)));
            row["added_ttfb_p99_ms"] = json!(ms(self.added_first.map(|s| s.p99)));
        }
        if let Some(own) = self.own {
            row["own_p50_ms"] = json!(ms(Some(own.p50)));
            row["own_p99_ms"] = json!(ms(Some(own.p99)));
        }
        if let Some(seen) = self.seen_upstream {
            row["seen_upstream_p50_ms"] = json!(ms(Some(seen.p50)));
        }
        if let Some(reason) = &self.unavailable {
            row["unavailable"] = json!(reason);
        }
        row
    }
}

fn load_name(load: Load) -> String {
    match load {
        Load::Sequential => "1 client".into(),
        Load::Open(rps) => format!("{rps:.0}/s"),
        Load::Max(clients) => format!("max ({clients})"),
    }
}

/// Prints the rows as a table.
pub fn print(rows: &[Row]) {
    println!(
        "{:<9} {:<9} {:<6} {:<10} {:>7} {:>6} {:>8} {:>8} {:>9} {:>9} {:>9} {:>12} {:>8} {:>8} {:>8}",
        "system",
        "api",
        "stream",
        "load",
        "req/s",
        "errors",
        "p50",
        "p99",
        "added p50",
        "added p90",
        "added p99",
        "added ttfb50",
        "cpu/req",
        "own p50",
        "its up50"
    );
    let cell = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    for row in rows {
        if let Some(reason) = &row.unavailable {
            println!(
                "{:<9} {:<9} {:<6} {:<10} unavailable: {reason}",
                row.system,
                row.api,
                row.stream,
                load_name(row.load)
            );
            continue;
        }
        println!(
            "{:<9} {:<9} {:<6} {:<10} {:>7.0} {:>6} {:>8} {:>8} {:>9} {:>9} {:>9} {:>12} {:>8} {:>8} {:>8}",
            row.system,
            row.api,
            row.stream,
            load_name(row.load),
            row.achieved_rps,
            row.errors,
            cell(row.last.map(|s| s.p50)),
            cell(row.last.map(|s| s.p99)),
            cell(row.added.map(|s| s.p50)),
            cell(row.added.map(|s| s.p90)),
            cell(row.added.map(|s| s.p99)),
            if row.stream { cell(row.added_first.map(|s| s.p50)) } else { String::new() },
            cell(row.cpu_per_request),
            cell(row.own.map(|s| s.p50)),
            cell(row.seen_upstream.map(|s| s.p50)),
        );
    }
    println!(
        "(milliseconds: p50/p99 to the last byte; added = over the upstream direct at the same load;
cpu/req = CPU time of the system's processes per request; own p50 = the system's own time by its
server-timing header, looprail's `gateway` metric: from the request's body read to the answer's head;
its up50 = the upstream's time as the system saw it, its `upstream` metric)"
    );
}
