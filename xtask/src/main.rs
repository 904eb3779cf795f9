//! `cargo xtask <task>`: the project's own tasks, in plain Rust with no dependencies.
//!
//! - `ci`: what `.ci/run` runs: fmt check, clippy with warnings denied, rustdoc with warnings
//!   denied, and the tests.
//! - `bench`: every crate's benchmarks, then one table of figures against their targets.
//!
//! `deny`, `release` and `docs` are tracked by issue 10.

use std::process::{Command, ExitCode};

fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("$ cargo {}", args.join(" "));
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let status = command.status().map_err(|e| format!("cannot start cargo: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`cargo {}` failed ({status})", args.join(" "))) }
}

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[])?;
    cargo(&["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])?;
    cargo(&["test", "--workspace"], &[])
}

/// A benchmark figure and its target, parsed from divan's output.
struct Figure {
    name: &'static str,
    bench: (&'static str, &'static str, &'static str),
    target: &'static str,
    check: fn(f64) -> bool,
}

const FIGURES: &[Figure] = &[
    Figure {
        name: "engine turn, 100-message history (median)",
        bench: ("looprail-loop-core", "engine_turn", "├─ 100 "),
        target: "< 10 µs",
        check: |ns| ns < 10_000.0,
    },
    Figure {
        name: "engine turn, 10,000-message history (median)",
        bench: ("looprail-loop-core", "engine_turn", "╰─ 10000 "),
        target: "< 10 µs",
        check: |ns| ns < 10_000.0,
    },
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

fn bench() -> Result<(), String> {
    eprintln!("$ cargo bench -p looprail-loop-core --features testkit --bench engine_turn");
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args(["bench", "-p", "looprail-loop-core", "--features", "testkit", "--bench", "engine_turn"])
        .output()
        .map_err(|e| format!("cannot start cargo: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    print!("{text}");
    if !output.status.success() {
        return Err(format!("benchmarks failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    // The steady-state `turn` group comes last in divan's alphabetical listing.
    let turn_section = text.split("╰─ turn").nth(1).unwrap_or_default();
    println!("\n{:<48} {:>12} {:>10} {:>6}", "figure", "value", "target", "result");
    let mut failed = 0;
    let mut medians = Vec::new();
    for figure in FIGURES {
        let line = turn_section.lines().find(|l| l.trim_start().starts_with(figure.bench.2.trim_end()));
        // columns: name │ fastest │ slowest │ median │ mean │ samples │ iters
        let median = line.and_then(|l| l.split('│').nth(2)).and_then(parse_duration);
        match median {
            Some(ns) => {
                let pass = (figure.check)(ns);
                failed += usize::from(!pass);
                medians.push(ns);
                println!(
                    "{:<48} {:>9.2} µs {:>10} {:>6}",
                    figure.name,
                    ns / 1e3,
                    figure.target,
                    if pass { "pass" } else { "FAIL" }
                );
            }
            None => {
                failed += 1;
                println!("{:<48} {:>12} {:>10} {:>6}", figure.name, "missing", figure.target, "FAIL");
            }
        }
    }
    if let [small, large] = medians[..] {
        let ratio = large / small;
        let pass = ratio <= 1.5;
        failed += usize::from(!pass);
        println!(
            "{:<48} {:>11.2}x {:>10} {:>6}",
            "10,000 vs 100 messages",
            ratio,
            "<= 1.5x",
            if pass { "pass" } else { "FAIL" }
        );
    }
    if failed == 0 { Ok(()) } else { Err(format!("{failed} figure(s) missed their target")) }
}

fn main() -> ExitCode {
    let task = std::env::args().nth(1);
    let result = match task.as_deref() {
        Some("ci") => ci(),
        Some("bench") => bench(),
        Some(other) => Err(format!("unknown task `{other}`; tasks: ci, bench")),
        None => Err("usage: cargo xtask <ci|bench>".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
