//! The load generator: one request timed from when it was sent to its first and its last body
//! byte, and the three loads (one client in turn over every system; an open loop at a fixed
//! rate, each request sent on time whether or not earlier ones were answered, so a slow system
//! cannot slow the load down and hide its queue; a closed loop of many clients for the highest
//! rate a system sustains).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use crate::requests::{Api, IN_FLIGHT, body, in_flight, nth};

/// A request ready to send: its conversation's name and its body.
pub struct Prepared {
    run: Option<String>,
    body: String,
}

impl Prepared {
    /// A request of an unnamed conversation (the gateway recognises it by its content).
    pub fn unnamed(body: String) -> Self {
        Self { run: None, body }
    }
}

/// Whether the small cells name their conversations (`x-looprail-run`): only with
/// `LOOPRAIL_PEERS_NAMED=1`. Agents send no name; the gateway recognises their conversations.
fn named() -> bool {
    std::env::var("LOOPRAIL_PEERS_NAMED").is_ok_and(|v| v == "1") && !crate::requests::training()
}

/// The key every request carries (LiteLLM's master key; the others do not check it).
pub const CLIENT_KEY: &str = "sk-looprail-bench-0123456789";

/// A request that takes longer than this is an error.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// One request's times (from when it was sent), or an error.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Until the first byte of the body.
    pub first: Duration,
    /// Until the last byte of the body.
    pub last: Duration,
    /// An error status, a broken connection or a timeout.
    pub failed: bool,
    /// The system's own time as its `server-timing` header's `gateway` metric says (looprail's).
    pub own: Option<Duration>,
    /// The upstream's time as the system saw it (the header's `upstream` metric).
    pub seen_upstream: Option<Duration>,
}

impl Sample {
    /// A request that failed, at the time it did.
    pub fn failed(due: Instant) -> Self {
        Self { first: due.elapsed(), last: due.elapsed(), failed: true, own: None, seen_upstream: None }
    }
}

/// A client of the systems: `timeout` for a whole exchange, up to `pool` idle connections, and
/// the bench's own CA trusted (it certifies the HTTPS upstream, reached direct).
pub fn client(timeout: Duration, pool: usize) -> Result<reqwest::Client, reqwest::Error> {
    client_builder(timeout, pool)?.build()
}

/// [`client`]'s settings, to add to.
pub fn client_builder(timeout: Duration, pool: usize) -> Result<reqwest::ClientBuilder, reqwest::Error> {
    let mut client = reqwest::Client::builder().timeout(timeout).pool_max_idle_per_host(pool);
    if let Ok(pem) = std::fs::read(crate::upstream::tls_dir().join("ca.pem")) {
        client = client.add_root_certificate(reqwest::Certificate::from_pem(&pem)?);
    }
    Ok(client)
}

/// A request of `api` to the system at `base`, with the headers every system is sent (the
/// client key as a bearer token and as `x-api-key`, Anthropic's version).
pub fn post(client: &reqwest::Client, base: &str, api: Api) -> reqwest::RequestBuilder {
    client
        .post(format!("{base}{}", api.path()))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {CLIENT_KEY}"))
        .header("x-api-key", CLIENT_KEY)
        .header("anthropic-version", "2023-06-01")
}

/// A system under measurement: its name and where requests go.
#[derive(Clone)]
pub struct Target {
    /// direct, nginx, litellm or looprail.
    pub system: &'static str,
    /// The base URL (without `/v1`).
    pub base: String,
    /// The system's process, when it is one (its CPU time is read around each load).
    pub pid: Option<u32>,
    client: reqwest::Client,
    cell: Arc<Mutex<Cell>>,
    probes: Arc<AtomicU64>,
}

/// Where a target's requests are in the conversations of the cell being measured.
#[derive(Debug, Default)]
struct Cell {
    /// The cells begun so far (a conversation's name carries its cell's).
    number: u64,
    /// Requests sent in this cell.
    sent: u64,
    /// Its conversations taken in turn.
    in_flight: u64,
}

impl Target {
    /// A target with its own connection pool.
    pub fn new(system: &'static str, base: String) -> Result<Self, reqwest::Error> {
        let client = client(TIMEOUT, 4_096)?;
        let cell = Arc::new(Mutex::new(Cell { in_flight: IN_FLIGHT, ..Cell::default() }));
        Ok(Self { system, base, pid: None, client, cell, probes: Arc::new(AtomicU64::new(0)) })
    }

    /// Begins a cell of about `requests` requests (`u64::MAX` when not known): its conversations
    /// are new ones, as many taken in turn as run whole within it (see [`in_flight`]).
    pub fn begin_cell(&self, requests: u64) {
        let mut cell = self.cell.lock().expect("cell lock");
        *cell = Cell { number: cell.number + 1, sent: 0, in_flight: in_flight(requests) };
    }

    /// The next request of the cell begun last (see [`crate::requests`]).
    pub fn next_body(&self, api: Api, stream: bool) -> Prepared {
        let (number, n, in_flight) = {
            let mut cell = self.cell.lock().expect("cell lock");
            cell.sent += 1;
            (cell.number, cell.sent - 1, cell.in_flight)
        };
        let (conversation, calls) = nth(n, in_flight);
        // Apart per system and cell: a conversation never changes API mid-way, nor goes on
        // from another cell's.
        let run =
            format!("{}-{}-{}-{stream}-{number}-{conversation}", self.system, std::process::id(), api.name());
        Prepared { body: body(api, stream, &run, calls), run: Some(run) }
    }

    /// A request measured by no cell (a check that the system answers): a conversation of its
    /// own, its first request.
    pub fn probe_body(&self, api: Api) -> Prepared {
        let n = self.probes.fetch_add(1, Ordering::Relaxed);
        let run = format!("{}-{}-{}-probe-{n}", self.system, std::process::id(), api.name());
        Prepared { body: body(api, false, &run, 1), run: Some(run) }
    }

    /// Sends `request`, timing from `due` (now, or when it was sent).
    pub async fn send(&self, api: Api, request: Prepared, due: Instant) -> Sample {
        let mut post = post(&self.client, &self.base, api);
        if let Some(run) = request.run.filter(|_| named()) {
            post = post.header("x-looprail-run", run);
        }
        let response = post.body(request.body).send().await;
        let Ok(response) = response else { return Sample::failed(due) };
        let ok = response.status().is_success();
        let (own, seen_upstream) =
            (metric(response.headers(), "gateway"), metric(response.headers(), "upstream"));
        let mut chunks = response.bytes_stream();
        let mut first = None;
        let mut bytes = 0;
        while let Some(chunk) = chunks.next().await {
            let Ok(chunk) = chunk else { return Sample::failed(due) };
            if !chunk.is_empty() {
                first.get_or_insert_with(|| due.elapsed());
                bytes += chunk.len();
            }
        }
        let last = due.elapsed();
        Sample { first: first.unwrap_or(last), last, failed: !ok || bytes == 0, own, seen_upstream }
    }
}

/// Metric `name` of a `server-timing` header (`gateway;dur=0.182, upstream;dur=0.241`).
fn metric(headers: &reqwest::header::HeaderMap, name: &str) -> Option<Duration> {
    let value = headers.get("server-timing")?.to_str().ok()?;
    let dur = value.split(',').find_map(|metric| metric.trim().strip_prefix(name)?.strip_prefix(";dur="))?;
    Some(Duration::from_secs_f64(dur.trim().parse::<f64>().ok()? / 1e3))
}

/// The pause after each answer of the one-client load: what a system still does after its
/// answer (saving, logging) is over before the next request, as it would be before an agent's
/// next step; without it the system measured next paid for it.
const BETWEEN_REQUESTS: Duration = Duration::from_millis(1);

/// `rounds` requests from one client, the systems taking turns request by request (so the
/// machine's drift falls on all alike), the turn's first system moving on by one each round
/// and a pause after each answer (so no system's after-work falls on one other system, the
/// upstream direct included: that once flattered whichever system came last); one list of
/// samples per target.
pub async fn sequential(targets: &[Target], api: Api, stream: bool, rounds: usize) -> Vec<Vec<Sample>> {
    let mut samples = vec![Vec::with_capacity(rounds); targets.len()];
    for target in targets {
        target.begin_cell(rounds as u64);
    }
    for round in 0..rounds {
        for turn in 0..targets.len() {
            let i = (round + turn) % targets.len();
            let body = targets[i].next_body(api, stream);
            samples[i].push(targets[i].send(api, body, Instant::now()).await);
            tokio::time::sleep(BETWEEN_REQUESTS).await;
        }
    }
    samples
}

/// An open loop: a request due every `1 / rps` seconds for `length`, each sent when due whether
/// or not earlier ones have been answered. Returns the samples and the achieved rate (answered
/// requests over the time until the last answer).
pub async fn open(target: &Target, api: Api, stream: bool, rps: f64, length: Duration) -> (Vec<Sample>, f64) {
    let count = (rps * length.as_secs_f64()).round() as usize;
    target.begin_cell(count as u64);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(count);
    for i in 0..count {
        let body = target.next_body(api, stream);
        let due = started + Duration::from_secs_f64(i as f64 / rps);
        tokio::time::sleep_until(due.into()).await;
        // Timed from when it was due: a generator (or a machine) that falls behind counts
        // against the system measured, never hides a queue.
        let target = target.clone();
        tasks.push(tokio::spawn(async move { target.send(api, body, due).await }));
    }
    collect(tasks, started).await
}

/// A closed loop: `clients` clients each sending its next request when the last is answered,
/// for `length`. Returns the samples and the achieved rate.
pub async fn closed(
    target: &Target,
    api: Api,
    stream: bool,
    clients: usize,
    length: Duration,
) -> (Vec<Sample>, f64) {
    target.begin_cell(u64::MAX);
    let started = Instant::now();
    let tasks = (0..clients)
        .map(|_| {
            let target = target.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while started.elapsed() < length {
                    let body = target.next_body(api, stream);
                    samples.push(target.send(api, body, Instant::now()).await);
                }
                samples
            })
        })
        .collect::<Vec<_>>();
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.unwrap_or_default());
    }
    let answered = samples.iter().filter(|s| !s.failed).count();
    (samples, answered as f64 / started.elapsed().as_secs_f64())
}

async fn collect(tasks: Vec<tokio::task::JoinHandle<Sample>>, started: Instant) -> (Vec<Sample>, f64) {
    let mut samples = Vec::with_capacity(tasks.len());
    for task in tasks {
        if let Ok(sample) = task.await {
            samples.push(sample);
        }
    }
    let answered = samples.iter().filter(|s| !s.failed).count();
    (samples, answered as f64 / started.elapsed().as_secs_f64())
}
