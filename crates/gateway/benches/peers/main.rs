//! `cargo xtask bench gateway-peers` (issue 37): looprail's gateway side by side with the
//! gateways users run today, measured in one run on one machine against one fake upstream.
//!
//! The systems: the upstream direct, nginx as a plain reverse proxy (the floor for any HTTP
//! proxy), the LiteLLM proxy, and `looprail gateway` with its defaults. Each is sent the same
//! requests (OpenAI Chat Completions and Anthropic Messages, streamed and not; a new agent
//! conversation per request) at the same loads: one client, the systems taking turns request
//! by request; open loops at 100 and 1,000 requests/s; a closed loop of many clients for the
//! highest rate sustained. Added latency is a system's percentile minus the direct upstream's
//! at the same load. Rows go to `target/bench/gateway-peers.json` and a table; the issue's
//! targets are checked last (exit status 1 when one is missed).
//!
//! The xtask provides the programs (environment): `LOOPRAIL_PEERS_LOOPRAIL` (the binary the
//! packages ship, with `LOOPRAIL_PEERS_LOOPRAIL_BUILD` saying how it was built, which the
//! JSON's `versions.looprail_build` repeats), `LOOPRAIL_PEERS_NGINX`, `LOOPRAIL_PEERS_LITELLM`
//! (its venv's `litellm`), each `LOOPRAIL_PEERS_<NAME>_REASON` when it could not be had;
//! `LOOPRAIL_PEERS_QUICK=1` shortens every load (a smoke run, not figures);
//! `LOOPRAIL_PEERS_SYSTEMS=nginx,looprail` measures only the systems named (and the upstream
//! direct); `LOOPRAIL_PEERS_LOADS=1,100,1000,max` the loads named, in that order (`1` is the one client in turn; `1,max,1` measures it before and
//! after the highest rate); `LOOPRAIL_PEERS_BASELINE=<looprail binary>` adds
//! that build as the system `baseline`, to compare a change with the build before it;
//! `LOOPRAIL_PEERS_RELEASE=<looprail binary>` the plain release build as `release`, beside the
//! packaged (profile-guided) one the xtask passes;
//! `LOOPRAIL_PEERS_FS_WAIT_S` caps the wait for a settled filesystem (default 420 s);
//! `LOOPRAIL_PEERS_TRAFFIC=small|agent` measures only the small requests' cells or only the
//! agent-traffic cells ([`agent`]; both by default); `LOOPRAIL_PEERS_NAMED=1` names the small
//! cells' conversations (`x-looprail-run`; unnamed by default, as agents send them);
//! `LOOPRAIL_PEERS_AGENT_HTTP=1` runs the agent cells over plain HTTP instead of HTTPS;
//! `LOOPRAIL_PEERS_PG=0` leaves the gateway on a PostgreSQL store (`looprail-pg`, a throwaway
//! server started as the tests start theirs) out of the agent-traffic cells;
//! `LOOPRAIL_PEERS_BODY_ROUNDS=repeats,conversations,steps` sizes the body cells (3,8,10: 240 timed requests per system and size);
//! `LOOPRAIL_PEERS_SAMPLES=<file>` appends each timed body request to it as a CSV line.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

mod agent;
mod agent_requests;
mod load;
mod quiet;
mod report;
mod requests;
mod systems;
mod targets;
mod upstream;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use load::Target;
use report::{Load, Row};
use requests::Api;
use serde_json::json;

/// Clients of the closed loop (the highest sustained rate).
const MAX_CLIENTS: usize = 64;

/// How long each load runs.
struct Lengths {
    rounds: usize,
    open_100: Duration,
    open_1000: Duration,
    max: Duration,
}

/// A peer's program from the environment, or why there is none.
fn program(name: &str) -> Result<PathBuf, String> {
    let key = format!("LOOPRAIL_PEERS_{name}");
    match std::env::var_os(&key).map(PathBuf::from) {
        Some(path) if path.exists() => Ok(path),
        Some(path) => Err(format!("{} does not exist", path.display())),
        None => Err(std::env::var(format!("{key}_REASON"))
            .unwrap_or_else(|_| format!("{key} not set (run `cargo xtask bench gateway-peers`)"))),
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Starts every system; a peer that cannot be started is its reason.
///
/// With `postgres`, the looprail binary is also started on a PostgreSQL store, as
/// `looprail-pg` (a throwaway server; its state saved before each answer, as replicas need).
async fn systems(
    upstream: &str,
    dir: &Path,
    postgres: bool,
) -> Vec<(&'static str, Result<(Target, Option<systems::Running>), String>)> {
    let mut started = vec![(
        "direct",
        Target::new("direct", upstream.to_owned()).map(|t| (t, None)).map_err(|e| e.to_string()),
    )];
    let looprail = program("LOOPRAIL").or_else(|reason| {
        let built = workspace().join("target/release/looprail");
        if built.exists() { Ok(built) } else { Err(reason) }
    });
    // LiteLLM last: past its capacity it works off its backlog after the load stops, so what
    // comes after it waits until it is idle again (`settle`).
    let mut peers: Vec<(&'static str, Result<PathBuf, String>)> =
        vec![("nginx", program("NGINX")), ("looprail", looprail), ("litellm", program("LITELLM"))];
    // LOOPRAIL_PEERS_BASELINE=<another looprail binary>: measured too, as `baseline`, to compare
    // a change with the build before it in one run (the systems take turns request by request).
    if let Some(baseline) = std::env::var_os("LOOPRAIL_PEERS_BASELINE") {
        peers.insert(2, ("baseline", Ok(PathBuf::from(baseline))));
    }
    // LOOPRAIL_PEERS_RELEASE=<the plain release build>: measured beside the packaged one, as
    // `release`, so the profile-guided build's share of the figures shows.
    if let Some(release) = std::env::var_os("LOOPRAIL_PEERS_RELEASE") {
        peers.insert(2, ("release", Ok(PathBuf::from(release))));
    }
    if postgres {
        let at = peers.iter().position(|(s, _)| *s == "litellm").unwrap_or(peers.len());
        let program = peers.iter().find(|(s, _)| *s == "looprail").map(|(_, p)| p.clone());
        peers.insert(at, ("looprail-pg", program.unwrap_or_else(|| Err("no looprail binary".to_owned()))));
    }
    // LOOPRAIL_PEERS_SYSTEMS=nginx,looprail measures only those (beside the upstream direct).
    let only = std::env::var("LOOPRAIL_PEERS_SYSTEMS").ok();
    for (system, program) in peers {
        let program = match &only {
            Some(only)
                if !matches!(system, "baseline" | "release")
                    && !only.split(',').any(|s| s.trim() == system) =>
            {
                Err("not chosen (LOOPRAIL_PEERS_SYSTEMS)".to_owned())
            }
            _ => program,
        };
        let sub = dir.join(system);
        let _ = std::fs::create_dir_all(&sub);
        let running = match program {
            Err(reason) => Err(reason),
            Ok(program) => match system {
                "nginx" => systems::nginx(&program, upstream, &sub).await,
                "litellm" => systems::litellm(&program, upstream, &sub).await,
                "looprail-pg" => match postgres_store().await {
                    Ok(url) => systems::looprail(system, &program, upstream, &sub, Some(&url)).await,
                    Err(reason) => Err(reason),
                },
                _ => systems::looprail(system, &program, upstream, &sub, None).await,
            },
        };
        let entry = running.and_then(|r| {
            Target::new(system, r.base.clone())
                .map(|mut t| {
                    t.pid = Some(r.pid());
                    (t, Some(r))
                })
                .map_err(|e| e.to_string())
        });
        if let Err(reason) = &entry {
            eprintln!("{system}: unavailable: {reason}");
        }
        started.push((system, entry));
    }
    started
}

/// A fresh database on a throwaway PostgreSQL server (the tests' own), kept for the process.
async fn postgres_store() -> Result<String, String> {
    let server = looprail_testkit_postgres::server()?;
    Ok(server.fresh_database().await)
}

/// One client sending to `targets` in turn for `rounds` rounds: a row each.
async fn in_turns(targets: &[Target], api: Api, stream: bool, rounds: usize) -> Vec<Row> {
    let load = Load::Sequential;
    let before: Vec<Option<f64>> = targets.iter().map(cpu).collect();
    let samples = load::sequential(targets, api, stream, rounds).await;
    samples
        .iter()
        .zip(targets)
        .zip(before)
        .map(|((samples, t), before)| {
            let mut row = Row::measured(t.system, api.name(), stream, load, samples, 0.0);
            row.cpu_per_request = per_request(before, cpu(t), samples.len());
            row
        })
        .collect()
}

/// The CPU seconds a system's processes have used so far.
fn cpu(target: &Target) -> Option<f64> {
    target.pid.and_then(systems::cpu_seconds)
}

/// CPU milliseconds per request between two readings.
fn per_request(before: Option<f64>, after: Option<f64>, requests: usize) -> Option<f64> {
    Some((after? - before?) * 1e3 / requests.max(1) as f64)
}

/// Waits until `target` answers promptly again (a system past its capacity is still working off
/// its backlog when the load stops, taking the cores from whatever is measured next).
async fn settle(target: &Target, api: Api) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let probe = target.send(api, target.probe_body(api), std::time::Instant::now()).await;
        if !probe.failed && probe.last < Duration::from_millis(200) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!("{} still busy after 60 s", target.system);
}

/// The loads to measure, in order: those `LOOPRAIL_PEERS_LOADS` names, in its order and as often
/// as it names them (`1,max,1` measures one client before and after the highest rate), or
/// every load once.
fn loads() -> Vec<Load> {
    let every = [Load::Sequential, Load::Open(100.0), Load::Open(1_000.0), Load::Max(MAX_CLIENTS)];
    let Ok(named) = std::env::var("LOOPRAIL_PEERS_LOADS") else { return every.to_vec() };
    named
        .split(',')
        .filter_map(|name| match name.trim() {
            "1" => Some(Load::Sequential),
            "max" => Some(Load::Max(MAX_CLIENTS)),
            rate => match rate.parse::<f64>() {
                Ok(rps) if rps > 0.0 => Some(Load::Open(rps)),
                _ => {
                    eprintln!("LOOPRAIL_PEERS_LOADS: {rate:?} is not a load (1, a rate, or max)");
                    None
                }
            },
        })
        .collect()
}

async fn measure(targets: &[Target], skipped: &[(&'static str, String)], lengths: &Lengths) -> Vec<Row> {
    let mut rows = Vec::new();
    let loads = loads();
    // Load by load, each across the four API and streaming cells: this VM's speed drifts over
    // minutes, so the rows of one load (the one-client rows most) are read in one phase.
    for &load in &loads {
        for api in [Api::OpenAi, Api::Anthropic] {
            for stream in [false, true] {
                eprintln!("measuring {} stream={stream} {load:?}", api.name());
                let mut cell: Vec<Row> = match load {
                    Load::Sequential => {
                        // The systems take turns request by request, so the machine's drift falls
                        // on all alike; LiteLLM apart (its workers' own CPU, hundreds of times
                        // the others', would fall on their turns), in turns with the upstream.
                        let (apart, together): (Vec<Target>, Vec<Target>) =
                            targets.iter().cloned().partition(|t| t.system == "litellm");
                        quiet::quiet().await;
                        let mut cell = in_turns(&together, api, stream, lengths.rounds).await;
                        let direct = targets.iter().find(|t| t.system == "direct");
                        for system in apart {
                            quiet::quiet().await;
                            let pair: Vec<Target> = direct.into_iter().cloned().chain([system]).collect();
                            let mut rows = in_turns(&pair, api, stream, lengths.rounds).await;
                            let own = rows.pop();
                            if let (Some(mut own), Some(direct)) = (own, rows.pop()) {
                                own.against(&direct);
                                cell.push(own);
                            }
                        }
                        cell
                    }
                    _ => {
                        let mut cell = Vec::new();
                        for target in targets {
                            quiet::quiet().await;
                            let before = cpu(target);
                            let (samples, rate) = match load {
                                Load::Open(rps) => {
                                    let length =
                                        if rps > 500.0 { lengths.open_1000 } else { lengths.open_100 };
                                    load::open(target, api, stream, rps, length).await
                                }
                                _ => load::closed(target, api, stream, MAX_CLIENTS, lengths.max).await,
                            };
                            let mut row =
                                Row::measured(target.system, api.name(), stream, load, &samples, rate);
                            row.cpu_per_request = per_request(before, cpu(target), samples.len());
                            cell.push(row);
                            settle(target, api).await;
                        }
                        cell
                    }
                };
                if let Load::Sequential = load {
                    // One client in turn: requests per second is what that one client saw.
                    for row in &mut cell {
                        row.achieved_rps = row.last.map_or(0.0, |s| 1_000.0 / s.p50.max(1e-6));
                    }
                }
                let direct = cell.iter().find(|r| r.system == "direct").cloned();
                for row in &mut cell {
                    if let (Some(direct), true) = (&direct, row.system != "direct" && row.added.is_none()) {
                        row.against(direct);
                    }
                }
                rows.extend(cell);
                rows.extend(
                    skipped
                        .iter()
                        .map(|(system, reason)| Row::unavailable(system, api.name(), stream, load, reason)),
                );
            }
        }
    }
    rows
}

/// Warms every system: connections open, caches and the store's file in use.
async fn warm(targets: &[Target]) {
    for target in targets {
        for api in [Api::OpenAi, Api::Anthropic] {
            for stream in [false, true] {
                load::closed(target, api, stream, 8, Duration::from_millis(300)).await;
            }
        }
    }
}

/// How many slow streams `system` can be sent here, at most 10,000. The open-file limit caps
/// each process: the fake upstream speaks HTTP/2 over TLS, so the upstream direct and looprail
/// (whose client speaks it) reach it over a few connections, but nginx and LiteLLM open one
/// connection per stream to it, and this process then holds two sockets per stream (the
/// client's and the upstream's).
fn stream_capacity(system: &str) -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1_024);
    let per_stream = if matches!(system, "nginx" | "litellm") { 2 } else { 1 };
    (soft.saturating_sub(512) / per_stream).min(10_000)
}

/// The agent-traffic cells (see [`agent`]), every system in each.
async fn measure_agent(targets: &[Target], quick: bool) -> Vec<agent::AgentRow> {
    // LOOPRAIL_PEERS_BODY_ROUNDS=repeats,conversations,steps: more requests per body cell.
    let rounds = std::env::var("LOOPRAIL_PEERS_BODY_ROUNDS").ok().and_then(|v| {
        let n: Vec<usize> = v.split(',').filter_map(|n| n.trim().parse().ok()).collect();
        (n.len() == 3 && n.iter().all(|&n| n > 0)).then(|| (n[0], n[1], n[2]))
    });
    let (repeats, conversations, steps) = rounds.unwrap_or(if quick { (1, 2, 5) } else { (3, 8, 10) });
    // LOOPRAIL_PEERS_AGENT_CELLS=bodies,conversations,slow: only those (all by default).
    let cell = |name: &str| {
        std::env::var("LOOPRAIL_PEERS_AGENT_CELLS").map_or(true, |v| v.split(',').any(|c| c.trim() == name))
    };
    let mut rows =
        if cell("bodies") { agent::bodies(targets, repeats, conversations, steps).await } else { Vec::new() };
    let (count, rate) = if quick { (1_000, 500.0) } else { (10_000, 500.0) };
    let mut direct: Option<agent::AgentRow> = None;
    for target in targets.iter().filter(|_| cell("conversations")) {
        eprintln!("measuring {count} conversations through {}", target.system);
        quiet::quiet().await;
        let (samples, _) = agent::conversations(target, count, rate).await;
        let row = agent::row(format!("conversations {count}"), target.system, &samples, direct.as_ref());
        if target.system == "direct" {
            direct = Some(row.clone());
        }
        rows.push(row);
        settle(target, Api::Anthropic).await;
    }
    let counts: Vec<usize> = match (cell("slow"), quick) {
        (false, _) => Vec::new(),
        (true, true) => vec![200],
        (true, false) => std::env::var("LOOPRAIL_PEERS_STREAMS")
            .ok()
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![1_000, 10_000]),
    };
    for wanted in counts {
        let mut direct: Option<agent::AgentRow> = None;
        // The store plays no part in a stream's relay: the PostgreSQL gateway sits this out.
        for target in targets.iter().filter(|t| t.system != "looprail-pg") {
            let count = wanted.min(stream_capacity(target.system));
            eprintln!("measuring {count} slow streams through {}", target.system);
            quiet::quiet().await;
            quiet::ports_free().await;
            if let Some(pid) = target.pid {
                systems::reset_peak_rss(pid);
            }
            let samples = agent::slow_streams(target, count).await;
            agent::print_why(target.system);
            let mut row =
                agent::row(format!("slow streams {count}"), target.system, &samples, direct.as_ref());
            row.peak_rss_mb = target.pid.and_then(systems::peak_rss_mb);
            if target.system == "direct" {
                direct = Some(row.clone());
            }
            rows.push(row);
            settle(target, Api::Anthropic).await;
        }
    }
    rows
}

/// Whether the agent-traffic cells run (`LOOPRAIL_PEERS_TRAFFIC`: `small`, `agent` or both,
/// the default).
fn traffic(kind: &str) -> bool {
    std::env::var("LOOPRAIL_PEERS_TRAFFIC").map_or(true, |v| v.split(',').any(|k| k.trim() == kind))
}

async fn run() -> Result<usize, String> {
    let quick = std::env::var("LOOPRAIL_PEERS_QUICK").is_ok_and(|v| v == "1");
    let lengths = if quick {
        Lengths {
            rounds: 60,
            open_100: Duration::from_secs(1),
            open_1000: Duration::from_millis(500),
            max: Duration::from_secs(1),
        }
    } else {
        Lengths {
            rounds: 400,
            open_100: Duration::from_secs(5),
            open_1000: Duration::from_secs(3),
            max: Duration::from_secs(4),
        }
    };
    let upstream = upstream::start().await.map_err(|e| format!("cannot start the fake upstream: {e}"))?;
    // The systems' files (stores, recordings, logs) under the workspace's target, not the
    // system's temporary directory: on a machine whose /tmp saw many files deleted lately,
    // creating a file there cost ~0.6 ms (ext4 skips recently freed inodes one by one) against
    // ~30 µs elsewhere on the same disk — a cost of that machine's other work, not of a system.
    let _ = std::fs::create_dir_all(workspace().join("target/bench"));
    let mut dir = tempfile::Builder::new()
        .prefix("peers-")
        .tempdir_in(workspace().join("target/bench"))
        .or_else(|_| tempfile::tempdir())
        .map_err(|e| e.to_string())?;
    // LOOPRAIL_PEERS_KEEP=1 keeps the systems' files (their logs) after the run.
    dir.disable_cleanup(std::env::var("LOOPRAIL_PEERS_KEEP").is_ok_and(|v| v == "1"));
    let file_create_us = settled_filesystem(dir.path()).await;
    let started = systems(&upstream, dir.path(), false).await;
    let (mut targets, mut skipped, mut running) = (Vec::new(), Vec::new(), Vec::new());
    for (system, entry) in started {
        match entry {
            Ok((target, process)) => {
                targets.push(target);
                running.extend(process);
            }
            Err(reason) => skipped.push((system, reason)),
        }
    }
    warm(&targets).await;
    let rows = if traffic("small") { measure(&targets, &skipped, &lengths).await } else { Vec::new() };
    drop(running);
    // The agent-traffic cells over HTTPS: the systems again, in front of the upstream's TLS
    // twin, trusting the bench's CA.
    let agent_rows = if traffic("agent") {
        // LOOPRAIL_PEERS_AGENT_HTTP=1: the same cells over plain HTTP (to tell TLS's share).
        let tls = if std::env::var("LOOPRAIL_PEERS_AGENT_HTTP").is_ok_and(|v| v == "1") {
            upstream::start().await.map_err(|e| e.to_string())
        } else {
            upstream::start_tls().await
        }
        .map_err(|e| format!("cannot start the agent cells' upstream: {e}"))?;
        let sub = dir.path().join("https");
        let _ = std::fs::create_dir_all(&sub);
        let (mut targets, mut running) = (Vec::new(), Vec::new());
        // LOOPRAIL_PEERS_PG=0 leaves out the PostgreSQL-store gateway.
        let postgres = std::env::var("LOOPRAIL_PEERS_PG").map_or(true, |v| v != "0");
        for (system, entry) in systems(&tls, &sub, postgres).await {
            match entry {
                Ok((target, process)) => {
                    targets.push(target);
                    running.extend(process);
                }
                Err(reason) => eprintln!("{system}: not in the agent-traffic cells: {reason}"),
            }
        }
        warm(&targets).await;
        measure_agent(&targets, quick).await
    } else {
        Vec::new()
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    report::print(&rows);
    agent::print(&agent_rows);
    let out = std::env::var_os("LOOPRAIL_PEERS_OUT")
        .map_or_else(|| workspace().join("target/bench/gateway-peers.json"), PathBuf::from);
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let document = json!({
        "machine": {"cores": cores, "cpu": cpu_model(), "quick": quick, "file_create_us": file_create_us},
        "versions": {"nginx": std::env::var("LOOPRAIL_PEERS_NGINX_VERSION").ok(),
            "litellm": std::env::var("LOOPRAIL_PEERS_LITELLM_VERSION").ok(),
            "looprail_build": std::env::var("LOOPRAIL_PEERS_LOOPRAIL_BUILD").ok()},
        "rows": rows.iter().map(|r| r.json(cores)).collect::<Vec<_>>(),
        "agent_rows": agent::json(&agent_rows),
    });
    let text = serde_json::to_string_pretty(&document).map_err(|e| e.to_string())?;
    std::fs::write(&out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("rows written to {}", out.display());
    let small = if traffic("small") { targets::check(&rows, MAX_CLIENTS) } else { 0 };
    let agent = if traffic("agent") { targets::check_agent(&agent_rows) } else { 0 };
    Ok(small + agent)
}

/// Creating a file slower than this (µs) is the filesystem still skipping recently freed inodes
/// (20 µs or less once settled, on the development VM).
const FILE_CREATE_SETTLED_US: f64 = 40.0;

/// Waits (up to 7 minutes, or the seconds `LOOPRAIL_PEERS_FS_WAIT_S` says: `0` for an
/// experiment on one part that does not need it) until creating a file under `dir` is quick
/// again; returns the last time measured. ext4 without a journal, creating a file, skips one by
/// one every inode freed in the last one to six minutes, and the run before this one (or a
/// build) may just have deleted tens of thousands: looprail's recordings then cost 0.1–0.8 ms
/// of CPU each and its p99 at 1,000 requests/s doubled, a cost of the previous run's clean-up,
/// not of a system.
async fn settled_filesystem(dir: &Path) -> Option<f64> {
    let started = std::time::Instant::now();
    let longest = std::env::var("LOOPRAIL_PEERS_FS_WAIT_S").ok().and_then(|s| s.parse().ok()).unwrap_or(420);
    loop {
        let us = file_create_us(dir)?;
        if us <= FILE_CREATE_SETTLED_US || started.elapsed() >= Duration::from_secs(longest) {
            println!(
                "creating a file where the systems keep theirs: {us:.0} µs (looprail records one per conversation)"
            );
            return Some(us);
        }
        eprintln!("creating a file takes {us:.0} µs here (files deleted lately); waiting for the filesystem");
        tokio::time::sleep(Duration::from_secs(15)).await;
    }
}

/// The median time to create (and close) an empty file in a new directory under `dir`, in
/// microseconds: a cost of the machine's filesystem that looprail's recordings pay once per
/// conversation (0.4–0.8 ms on the development VM under /work, ~20 µs elsewhere on its disk).
fn file_create_us(dir: &Path) -> Option<f64> {
    let probe = dir.join("file-create-probe");
    std::fs::create_dir(&probe).ok()?;
    let mut times: Vec<f64> = (0..200)
        .filter_map(|i| {
            let started = std::time::Instant::now();
            std::fs::File::create(probe.join(format!("{i}.jsonl"))).ok()?;
            Some(started.elapsed().as_secs_f64() * 1e6)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&probe);
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied()
}

/// The CPU's model name, when the system says it.
fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_owned())
}

fn main() -> ExitCode {
    // reqwest is built without a default TLS provider in this workspace (ring, as the gateway).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    match runtime.block_on(run()) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(missed) => {
            println!("{missed} target(s) missed");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("gateway-peers: {error}");
            ExitCode::FAILURE
        }
    }
}
