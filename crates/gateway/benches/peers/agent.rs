//! The agent-traffic cells (issue 68), beside the small requests of the other cells:
//!
//! - **bodies**: one client, the systems taking turns request by request (LiteLLM in turns with
//!   the upstream alone, as in the one-client cells), Claude-Code-shaped requests of 4, 50, 150
//!   and 500 KB ([`agent_requests`](crate::agent_requests)), unnamed, streamed; each conversation
//!   first sends its history so far (untimed: the gateway has seen the conversation before, as
//!   it has an agent's), then its next steps, timed. A system's added time is computed request
//!   by request against the upstream direct's request of the same round (both at the same
//!   moment of the machine), and the cell is repeated; the spread of the repeats is shown.
//! - **conversations**: an open loop over more conversations than the gateway keeps in memory
//!   (10,000: each sends its first request, then all their second ones), timed from when each
//!   request was due.
//! - **slow streams**: 1,000 and 10,000 streams at once, each waiting 0.5–2 s for its first
//!   event and then sending 200 events 40 ms apart (a slow model), through one system; errors
//!   and the system's peak memory (its processes' resident set) are reported. A system that
//!   opens one upstream connection per stream is sent as many as this process's open-file
//!   limit allows (it holds both ends: see `stream_capacity`).

use std::time::{Duration, Instant};

use axum::body::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::agent_requests::{SIZES_KB, request, slow_request};
use crate::load::{Prepared, Sample, Target};
use crate::requests::Api;

/// One agent-traffic row.
#[derive(Clone, Debug, Default)]
pub struct AgentRow {
    /// `body 150 KB`, `conversations 10000`, `slow streams 1000`.
    pub cell: String,
    /// The system.
    pub system: &'static str,
    /// Requests measured.
    pub requests: usize,
    /// Failed requests.
    pub errors: usize,
    /// p50 and p99 to the last byte (ms).
    pub last: Option<(f64, f64)>,
    /// p50 and p99 to the first byte (ms; a slow stream's after the model's own wait).
    pub first: Option<(f64, f64)>,
    /// Added p50 and p99 over the upstream direct (ms; by request pairs where the cell pairs them).
    pub added: Option<(f64, f64)>,
    /// Added time to the first byte, p50 and p99 (ms).
    pub added_first: Option<(f64, f64)>,
    /// Over the repeats: the lowest and highest added p50, and the lowest and highest added p99.
    pub spread: Option<(f64, f64, f64, f64)>,
    /// The system's peak resident memory over the cell (MB).
    pub peak_rss_mb: Option<f64>,
    /// The size of the cell's requests (KB).
    pub body_kb: Option<usize>,
    /// looprail's own time (its `server-timing` `gateway` metric) and the upstream's time as it
    /// saw it (`upstream`), p50 and p99 (ms): where an added millisecond goes.
    pub own: Option<(f64, f64)>,
    pub seen_upstream: Option<(f64, f64)>,
}

/// A system's figures over a body cell's repeats.
#[derive(Clone, Default)]
struct Tally {
    /// Each repeat's added p50 and p99.
    repeats: Vec<(f64, f64)>,
    /// Every request's added time to the last byte, and to the first.
    added: Vec<f64>,
    added_first: Vec<f64>,
    /// Every request's time to the last byte.
    last: Vec<f64>,
    /// The system's own time and the upstream's as it saw it, where it says (looprail).
    own: Vec<f64>,
    seen_upstream: Vec<f64>,
    errors: usize,
    requests: usize,
}

/// The p50 and p99 of `values` (ms).
fn p50_p99(mut values: Vec<f64>) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Some((at(0.5), at(0.99)))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Sends `body` unnamed to `target`, timed from now.
async fn send(target: &Target, body: String) -> Sample {
    target.send(Api::Anthropic, Prepared::unnamed(body), Instant::now()).await
}

/// One repeat of a body cell over `group` (the upstream direct first): per system, the samples
/// of each round (`None` for a round it was not in).
async fn body_rounds(
    group: &[Target],
    size_kb: usize,
    conversations: usize,
    steps: usize,
    repeat: usize,
) -> Vec<Vec<Sample>> {
    let mut samples = vec![Vec::new(); group.len()];
    for c in 0..conversations {
        let tag = |t: &Target| format!("{}-{}-r{repeat}-{size_kb}k-c{c}", t.system, std::process::id());
        // The conversation so far, seen by each system before it is timed.
        for target in group {
            send(target, request(&tag(target), size_kb, 0)).await;
        }
        for step in 1..=steps {
            for turn in 0..group.len() {
                let i = (step + turn) % group.len();
                let body = request(&tag(&group[i]), size_kb, step);
                samples[i].push(send(&group[i], body).await);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
    samples
}

/// With `LOOPRAIL_PEERS_SAMPLES=<file>`, appends one CSV line per timed request of a body cell
/// (size, system, repeat, conversation, step, its time to the last byte, the upstream direct's
/// in the same round, its own and upstream time where it says; ms): to see where a tail lies.
fn dump_samples(size_kb: usize, system: &str, repeat: usize, steps: usize, own: &[Sample], base: &[Sample]) {
    use std::io::Write as _;
    let Ok(path) = std::env::var("LOOPRAIL_PEERS_SAMPLES") else { return };
    let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(&path) else {
        eprintln!("cannot append to {path}");
        return;
    };
    let opt = |d: Option<Duration>| d.map_or(String::new(), |d| format!("{:.3}", ms(d)));
    let mut out = String::new();
    for (n, (mine, direct)) in own.iter().zip(base).enumerate() {
        out += &format!(
            "{size_kb},{system},{repeat},{},{},{:.3},{:.3},{},{},{}\n",
            n / steps.max(1),
            n % steps.max(1) + 1,
            ms(mine.last),
            ms(direct.last),
            opt(mine.own),
            opt(mine.seen_upstream),
            u8::from(mine.failed || direct.failed),
        );
    }
    if file.write_all(out.as_bytes()).is_err() {
        eprintln!("cannot append to {path}");
    }
}

/// The rows of the body cells.
pub async fn bodies(targets: &[Target], repeats: usize, conversations: usize, steps: usize) -> Vec<AgentRow> {
    let mut rows = Vec::new();
    let Some(direct) = targets.iter().find(|t| t.system == "direct") else { return rows };
    for size_kb in SIZES_KB {
        eprintln!("measuring agent bodies of {size_kb} KB");
        let (apart, together): (Vec<&Target>, Vec<&Target>) =
            targets.iter().filter(|t| t.system != "direct").partition(|t| t.system == "litellm");
        let mut groups: Vec<Vec<Target>> = vec![std::iter::once(direct).chain(together).cloned().collect()];
        groups.extend(apart.into_iter().map(|t| vec![direct.clone(), t.clone()]));
        for (g, group) in groups.into_iter().enumerate() {
            let mut tallies = vec![Tally::default(); group.len()];
            for repeat in 0..repeats {
                crate::quiet::quiet().await;
                let samples = body_rounds(&group, size_kb, conversations, steps, repeat).await;
                for (i, own) in samples.iter().enumerate() {
                    let tally = &mut tallies[i];
                    let mut added = Vec::new();
                    if i > 0 {
                        dump_samples(size_kb, group[i].system, repeat, steps, own, &samples[0]);
                    }
                    for (mine, base) in own.iter().zip(&samples[0]) {
                        tally.requests += 1;
                        if mine.failed || base.failed {
                            tally.errors += usize::from(mine.failed);
                            continue;
                        }
                        added.push(ms(mine.last) - ms(base.last));
                        tally.added_first.push(ms(mine.first) - ms(base.first));
                        tally.last.push(ms(mine.last));
                        tally.own.extend(mine.own.map(ms));
                        tally.seen_upstream.extend(mine.seen_upstream.map(ms));
                    }
                    tally.added.extend(&added);
                    tally.repeats.extend(p50_p99(added));
                }
            }
            // The upstream direct's row once per size (every group holds it).
            for (i, target) in group.iter().enumerate().skip(usize::from(g > 0)) {
                let Tally {
                    repeats: repeats_added,
                    added,
                    added_first: first,
                    last,
                    own,
                    seen_upstream,
                    errors,
                    requests,
                } = &tallies[i];
                let spread = (!repeats_added.is_empty() && target.system != "direct").then(|| {
                    let lows = repeats_added.iter().map(|r| r.0);
                    let highs = repeats_added.iter().map(|r| r.1);
                    (
                        lows.clone().fold(f64::MAX, f64::min),
                        lows.fold(f64::MIN, f64::max),
                        highs.clone().fold(f64::MAX, f64::min),
                        highs.fold(f64::MIN, f64::max),
                    )
                });
                rows.push(AgentRow {
                    cell: format!("body {size_kb} KB"),
                    system: target.system,
                    requests: *requests,
                    errors: *errors,
                    last: p50_p99(last.clone()),
                    first: None,
                    added: (target.system != "direct").then(|| p50_p99(added.clone())).flatten(),
                    added_first: (target.system != "direct").then(|| p50_p99(first.clone())).flatten(),
                    spread,
                    peak_rss_mb: None,
                    body_kb: Some(request("size", size_kb, 1).len() / 1024),
                    own: p50_p99(own.clone()),
                    seen_upstream: p50_p99(seen_upstream.clone()),
                });
            }
        }
    }
    rows
}

/// An open loop at `rps` over `count` conversations: each one's first request, then each one's
/// second; timed from when each was due.
pub async fn conversations(target: &Target, count: usize, rps: f64) -> (Vec<Sample>, usize) {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(count * 2);
    for i in 0..count * 2 {
        let (c, step) = (i % count, i / count);
        let tag = format!("{}-{}-many-c{c}", target.system, std::process::id());
        let body = request(&tag, 4, step);
        let due = started + Duration::from_secs_f64(i as f64 / rps);
        tokio::time::sleep_until(due.into()).await;
        let target = target.clone();
        tasks.push(tokio::spawn(
            async move { target.send(Api::Anthropic, Prepared::unnamed(body), due).await },
        ));
    }
    let mut samples = Vec::with_capacity(tasks.len());
    for task in tasks {
        samples.extend(task.await.ok());
    }
    let errors = samples.iter().filter(|s| s.failed).count();
    (samples, errors)
}

/// `count` slow streams at once through `target` (started over half a second); each one's
/// time to its first and last byte and whether it failed.
pub async fn slow_streams(target: &Target, count: usize) -> Vec<Sample> {
    let clients = stream_clients(&target.base, count);
    let started = Instant::now();
    let tasks: Vec<_> = (0..count)
        .map(|i| {
            let (client, base) = (clients[i % clients.len()].clone(), target.base.clone());
            // 0.5 to 2 s to the first event, spread over the streams.
            let delay = 500 + (i as u64 * 1_500) / count.max(1) as u64;
            let body = slow_request(&format!("slow-{i}"), delay, 200, 40);
            let due = started + Duration::from_micros((i as u64 * 500_000) / count.max(1) as u64);
            tokio::spawn(async move {
                tokio::time::sleep_until(due.into()).await;
                let response = crate::load::post(&client, &base, Api::Anthropic).body(body).send().await;
                let response = match response {
                    Ok(response) => response,
                    Err(e) => {
                        why("send", &chain(&e));
                        return Sample::failed(due);
                    }
                };
                let ok = response.status().is_success();
                if !ok {
                    why("status", response.status().as_str());
                }
                let mut chunks = response.bytes_stream();
                let (mut first, mut bytes, mut tail) = (None, 0, Bytes::new());
                while let Some(chunk) = chunks.next().await {
                    let chunk = match chunk {
                        Ok(chunk) => chunk,
                        Err(e) => {
                            why("body", &chain(&e));
                            return Sample::failed(due);
                        }
                    };
                    if !chunk.is_empty() {
                        // The first byte after the model's own wait.
                        first.get_or_insert_with(|| {
                            due.elapsed().saturating_sub(Duration::from_millis(delay))
                        });
                        bytes += chunk.len();
                        tail = chunk;
                    }
                }
                let last = due.elapsed();
                if ok && bytes < 9_000 {
                    // How it ended says why (the gateway's error event names the cause).
                    let end =
                        String::from_utf8_lossy(&tail[tail.len().saturating_sub(160)..]).replace('\n', " ");
                    why("short", &end);
                }
                Sample {
                    first: first.unwrap_or(last),
                    last,
                    failed: !ok || bytes < 9_000,
                    own: None,
                    seen_upstream: None,
                }
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(count);
    for task in tasks {
        samples.extend(task.await.ok());
    }
    samples
}

/// The clients `count` streams to `base` go through. The upstream direct speaks HTTP/2 over
/// TLS: reqwest's pool, not knowing a connection's protocol before ALPN, would open one per
/// waiting request and drop all but one (thousands of handshakes, then resets), and one
/// connection for them all is one task for all their frames. So a client per 500 streams,
/// each on one HTTP/2 connection from the start. The systems are reached over HTTP/1: one
/// client, a connection per stream.
fn stream_clients(base: &str, count: usize) -> Vec<reqwest::Client> {
    let timeout = Duration::from_secs(120);
    if !base.starts_with("https://") {
        return vec![crate::load::client(timeout, count).expect("client")];
    }
    (0..count.div_ceil(500).max(1))
        .map(|_| {
            crate::load::client_builder(timeout, 1)
                .and_then(|c| c.http2_prior_knowledge().build())
                .expect("client")
        })
        .collect()
}

/// Why slow streams failed (printed after the cell).
static WHY: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// An error with its causes (reqwest's own says only "error sending request").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

fn why(kind: &str, detail: &str) {
    let text: String = format!("{kind}: {detail}").chars().take(240).collect();
    WHY.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(text);
}

/// Prints (on stderr) why the streams of the last cell failed, counted by reason, and forgets it.
pub fn print_why(system: &str) {
    let mut seen = std::mem::take(&mut *WHY.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    seen.sort();
    let mut counted: Vec<(usize, String)> = Vec::new();
    for text in seen {
        match counted.last_mut() {
            Some((n, last)) if *last == text => *n += 1,
            _ => counted.push((1, text)),
        }
    }
    for (n, text) in counted {
        eprintln!("{system}: {n} streams failed: {text}");
    }
}

/// A row of an open-loop cell, its percentiles against the direct's row of the cell.
pub fn row(cell: String, system: &'static str, samples: &[Sample], direct: Option<&AgentRow>) -> AgentRow {
    let answered: Vec<&Sample> = samples.iter().filter(|s| !s.failed).collect();
    let last = p50_p99(answered.iter().map(|s| ms(s.last)).collect());
    let first = p50_p99(answered.iter().map(|s| ms(s.first)).collect());
    let minus = |own: Option<(f64, f64)>, base: Option<(f64, f64)>| {
        own.zip(base).map(|(o, b)| (o.0 - b.0, o.1 - b.1))
    };
    let direct = direct.filter(|_| system != "direct");
    AgentRow {
        cell,
        system,
        requests: samples.len(),
        errors: samples.len() - answered.len(),
        last,
        first,
        added: direct.and_then(|d| minus(last, d.last)),
        added_first: direct.and_then(|d| minus(first, d.first)),
        ..AgentRow::default()
    }
}

/// Prints the agent-traffic rows.
pub fn print(rows: &[AgentRow]) {
    println!("\nagent traffic (Anthropic Messages, streamed, unnamed conversations)");
    println!(
        "{:<22} {:<11} {:>6} {:>6} {:>8} {:>8} {:>9} {:>9} {:>10} {:>17} {:>17} {:>8} {:>13} {:>13}",
        "cell",
        "system",
        "req",
        "errors",
        "p50",
        "p99",
        "added p50",
        "added p99",
        "added ttfb",
        "p50 over repeats",
        "p99 over repeats",
        "peak MB",
        "own p50/p99",
        "its up p50/99"
    );
    let cell = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    let pair = |v: Option<(f64, f64)>| v.map_or_else(|| "-".to_owned(), |(a, b)| format!("{a:.2}/{b:.2}"));
    for r in rows {
        let name = match r.body_kb {
            Some(kb) => format!("{} ({kb} KB)", r.cell),
            None => r.cell.clone(),
        };
        let spread = |low: Option<f64>, high: Option<f64>| match (low, high) {
            (Some(l), Some(h)) if r.system != "direct" && r.cell.starts_with("body") => {
                format!("{l:.3}..{h:.3}")
            }
            _ => "-".to_owned(),
        };
        println!(
            "{:<22} {:<11} {:>6} {:>6} {:>8} {:>8} {:>9} {:>9} {:>10} {:>17} {:>17} {:>8} {:>13} {:>13}",
            name,
            r.system,
            r.requests,
            r.errors,
            cell(r.last.map(|l| l.0)),
            cell(r.last.map(|l| l.1)),
            cell(r.added.map(|a| a.0)),
            cell(r.added.map(|a| a.1)),
            cell(r.added_first.map(|a| a.0)),
            spread(r.spread.map(|s| s.0), r.spread.map(|s| s.1)),
            spread(r.spread.map(|s| s.2), r.spread.map(|s| s.3)),
            r.peak_rss_mb.map_or_else(|| "-".to_owned(), |m| format!("{m:.0}")),
            pair(r.own),
            pair(r.seen_upstream),
        );
    }
    println!(
        "(milliseconds; body cells: added = per request against the upstream direct's request of the same round, over every repeat;
open loops timed from when each request was due; peak MB = the system's processes' peak resident memory in the cell;
own = looprail's time by its server-timing header, from the request's body read to the answer's head; its up = the upstream's time as it saw it)"
    );
}

/// The rows as JSON.
pub fn json(rows: &[AgentRow]) -> Value {
    let ms = |v: Option<f64>| v.map(|v| (v * 1_000.0).round() / 1_000.0);
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({"cell": r.cell, "system": r.system, "requests": r.requests, "errors": r.errors,
                    "body_kb": r.body_kb, "p50_ms": ms(r.last.map(|l| l.0)), "p99_ms": ms(r.last.map(|l| l.1)),
                    "added_p50_ms": ms(r.added.map(|a| a.0)), "added_p99_ms": ms(r.added.map(|a| a.1)),
                    "added_ttfb_p50_ms": ms(r.added_first.map(|a| a.0)),
                    "added_p50_over_repeats_ms": r.spread.filter(|_| r.cell.starts_with("body")).map(|s| [s.0, s.1]),
                    "added_p99_over_repeats_ms": r.spread.filter(|_| r.cell.starts_with("body")).map(|s| [s.2, s.3]),
                    "peak_rss_mb": r.peak_rss_mb,
                    "own_p50_p99_ms": r.own.map(|o| [o.0, o.1]),
                    "seen_upstream_p50_p99_ms": r.seen_upstream.map(|o| [o.0, o.1])})
            })
            .collect(),
    )
}
