//! `cargo xtask bench`: every crate's divan benchmarks read into one table of medians against
//! their targets, and `cargo xtask bench audit`: the audit against a one-rule Python script and
//! against just reading and parsing the same files, whole processes side by side; `cargo xtask
//! bench hook`: the hook command, a whole process per event.

use std::path::Path;
use std::process::Command;

/// A benchmark: the package and bench target that produce it.
const BENCHES: &[(&str, &str, &[&str])] = &[
    ("looprail-loop-core", "engine_turn", &["--features", "testkit"]),
    ("looprail-guardrails", "observe_call", &[]),
    ("looprail-guardrails", "repetition", &[]),
    ("looprail-rag-dedup", "seen_checks", &[]),
    ("looprail-providers", "sse_parse", &[]),
    ("looprail-compaction", "counting", &[]),
    ("looprail-journal", "checkpoints", &[]),
    ("looprail-journal", "store_backends", &[]),
    ("looprail-gateway", "added_latency", &[]),
    ("looprail-gateway", "replicas", &[]),
    ("looprail-telemetry", "span_overhead", &[]),
];

/// A figure: a median read from divan's output (`bench/group/arg`), and its limit in ns.
struct Figure {
    name: &'static str,
    path: &'static str,
    limit_ns: f64,
    target: &'static str,
}

const FIGURES: &[Figure] = &[
    Figure {
        name: "telemetry per turn, OpenTelemetry layers on",
        path: "span_overhead/turn_with_otel_layers",
        limit_ns: 10_000.0,
        target: "< 10 µs",
    },
    Figure {
        name: "engine turn, 100-message history",
        path: "engine_turn/turn/100",
        limit_ns: 10_000.0,
        target: "< 10 µs",
    },
    Figure {
        name: "engine turn, 10,000-message history",
        path: "engine_turn/turn/10000",
        limit_ns: 10_000.0,
        target: "< 10 µs",
    },
    Figure {
        name: "guardrails per call, after 100 calls",
        path: "observe_call/default_stack_per_call/100",
        limit_ns: 2_000.0,
        target: "<= 2 µs",
    },
    Figure {
        name: "degenerate-reply detector, 1 MiB in 32-byte deltas",
        path: "repetition/detector_per_mib/32",
        limit_ns: 2_097_152.0,
        target: ">= 500 MB/s",
    },
    Figure {
        name: "degenerate-reply detector, 1 MiB in 4 KiB pieces",
        path: "repetition/detector_per_mib/4096",
        limit_ns: 2_097_152.0,
        target: ">= 500 MB/s",
    },
    Figure {
        name: "guardrails per call, after 10,000 calls",
        path: "observe_call/default_stack_per_call/10000",
        limit_ns: 2_000.0,
        target: "<= 2 µs",
    },
];

/// Ratios that show a cost does not grow with history: (name, larger, smaller, limit).
const RATIOS: &[(&str, &str, &str, f64)] = &[
    ("engine turn, 10,000 vs 100 messages", "engine_turn/turn/10000", "engine_turn/turn/100", 1.5),
    (
        "guardrails, 10,000 vs 100 earlier calls",
        "observe_call/default_stack_per_call/10000",
        "observe_call/default_stack_per_call/100",
        1.5,
    ),
];

/// Parses a divan duration such as `1.37 µs` into nanoseconds.
fn parse_duration(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let value: f64 = parts.next()?.parse().ok()?;
    let scale = match parts.next()? {
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(value * scale)
}

/// Reads divan's tree into (`bench/group/arg`, median ns) pairs.
fn parse_divan(bench: &str, output: &str) -> Vec<(String, f64)> {
    let mut medians = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    for line in output.lines() {
        let Some(glyph) = line.find("├─").or_else(|| line.find("╰─")) else { continue };
        let depth = line[..glyph].chars().count() / 3;
        let columns: Vec<&str> = line[glyph + "├─".len()..].split('│').collect();
        let name = columns[0].split_whitespace().next().unwrap_or_default().to_owned();
        stack.truncate(depth);
        stack.push(name);
        if let Some(median) = columns.get(3).and_then(|c| parse_duration(c)) {
            medians.push((format!("{bench}/{}", stack.join("/")), median));
        }
    }
    medians
}

pub fn bench() -> Result<(), String> {
    let mut medians = Vec::new();
    for (package, bench, extra) in BENCHES {
        let mut args = vec!["bench", "-p", package, "--bench", bench];
        args.extend_from_slice(extra);
        eprintln!("$ cargo {}", args.join(" "));
        let output =
            crate::cargo_command().args(&args).output().map_err(|e| format!("cannot start cargo: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        print!("{text}");
        if !output.status.success() {
            return Err(format!("{bench} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
        }
        medians.extend(parse_divan(bench, &text));
    }
    let find = |path: &str| medians.iter().find(|(p, _)| p == path).map(|(_, v)| *v);
    println!("\n{:<44} {:>12} {:>10} {:>6}", "figure (median)", "value", "target", "result");
    let mut failed = 0;
    for figure in FIGURES {
        match find(figure.path) {
            Some(ns) => {
                let pass = ns <= figure.limit_ns;
                failed += usize::from(!pass);
                println!(
                    "{:<44} {:>9.2} µs {:>10} {:>6}",
                    figure.name,
                    ns / 1e3,
                    figure.target,
                    if pass { "pass" } else { "FAIL" }
                );
            }
            None => {
                failed += 1;
                println!("{:<44} {:>12} {:>10} {:>6}", figure.name, "missing", figure.target, "FAIL");
            }
        }
    }
    for (name, large, small, limit) in RATIOS {
        match (find(large), find(small)) {
            (Some(l), Some(s)) => {
                let ratio = l / s;
                let pass = ratio <= *limit;
                failed += usize::from(!pass);
                println!(
                    "{:<44} {:>11.2}x {:>9}x {:>6}",
                    name,
                    ratio,
                    format!("<= {limit}"),
                    if pass { "pass" } else { "FAIL" }
                );
            }
            _ => {
                failed += 1;
                println!("{:<44} {:>12} {:>10} {:>6}", name, "missing", "", "FAIL");
            }
        }
    }
    failed += audit_speed()?;
    failed += crate::hook_speed::hook_speed()?;
    if failed == 0 { Ok(()) } else { Err(format!("{failed} figure(s) missed their target")) }
}

/// Seconds one run of `program args` takes (its output is discarded).
fn timed(program: &str, args: &[&str]) -> Result<f64, String> {
    let started = std::time::Instant::now();
    let status = Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    if !status.success() {
        return Err(format!("{program} {} failed", args.join(" ")));
    }
    Ok(started.elapsed().as_secs_f64())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The whole audit (all detectors, budgets, token peaks with and without compaction) against a
/// Python script applying one rule to the same files (xtask/scripts/one_rule.py), median of 5
/// alternating pairs, whole processes; the target is the audit at least 2x faster. Skipped
/// without ../shared/trajectories or python3. Returns the number of missed targets.
pub fn audit_speed() -> Result<usize, String> {
    let root = Path::new("../shared/trajectories");
    if !root.is_dir() || Command::new("python3").arg("--version").output().is_err() {
        println!("{:<44} {:>12} {:>10} {:>6}", "audit vs one-rule Python script", "skipped", "", "");
        return Ok(0);
    }
    let built = crate::cargo_command()
        .args([
            "build",
            "--release",
            "-q",
            "-p",
            "looprail-cli",
            "-p",
            "xtask",
            "--bin",
            "looprail",
            "--bin",
            "parse-floor",
        ])
        .status()
        .map_err(|e| format!("cannot build looprail: {e}"))?;
    if !built.success() {
        return Err("building looprail failed".into());
    }
    let root = root.display().to_string();
    let (mut ours, mut theirs, mut parse) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        ours.push(timed("target/release/looprail", &["audit", "--json", &root])?);
        theirs.push(timed("python3", &["xtask/scripts/one_rule.py", &root])?);
        parse.push(timed("target/release/parse-floor", &[&root])?);
    }
    let (ours, theirs, parse) = (median(ours), median(theirs), median(parse));
    let ratio = theirs / ours;
    let pass = ratio >= 2.0;
    let over_parse = ours / parse;
    let close = over_parse <= 3.0;
    println!("{:<44} {:>9.2} s {:>10} {:>6}", "audit, 791 runs (whole process)", ours, "", "");
    println!("{:<44} {:>9.2} s {:>10} {:>6}", "one-rule Python script, same files", theirs, "", "");
    println!("{:<44} {:>9.2} s {:>10} {:>6}", "read + parse the same files (2 threads)", parse, "", "");
    println!(
        "{:<44} {:>11.2}x {:>10} {:>6}",
        "audit speed vs the Python script",
        ratio,
        ">= 2x",
        if pass { "pass" } else { "FAIL" }
    );
    println!(
        "{:<44} {:>11.2}x {:>10} {:>6}",
        "audit time over read + parse",
        over_parse,
        "<= 3x",
        if close { "pass" } else { "FAIL" }
    );
    Ok(usize::from(!pass) + usize::from(!close))
}
