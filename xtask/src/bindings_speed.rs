//! `cargo xtask bench bindings`: the guard's cost per guarded tool call in Rust, through the
//! Python module and through the Node package, side by side (the same loop in each:
//! crates/embed/examples/guarded_calls.rs, crates/python/bench, crates/node/bench), release
//! builds. The three run in turn, 7 rounds: a binding's added cost is the median of its
//! differences to the Rust run of the same round, so that a busy spell of the machine (on a
//! shared VM the same run varies up to 2x) weighs on both sides of each difference. The target:
//! each binding adds at most 5 µs per call.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Calls per run.
const CALLS: &str = "100000";
/// What a binding may add per guarded call, in ns.
const LIMIT_NS: f64 = 5_000.0;

fn ns(program: &Path, args: &[&str], env: &[(&str, &Path)]) -> Result<f64, String> {
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed: {}", program.display(), String::from_utf8_lossy(&out.stderr)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| format!("{} printed `{}`, not a number", program.display(), text.trim()))
}

/// Rounds of the three runs.
const ROUNDS: usize = 7;

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// Runs the comparison; the number of missed targets.
pub fn bindings_speed() -> Result<usize, String> {
    for selection in [
        &["-p", "looprail-embed", "--example", "guarded_calls"][..],
        &["-p", "looprail-python", "-p", "looprail-node"],
    ] {
        let built = crate::cargo_command()
            .args(["build", "--release", "-q"])
            .args(selection)
            .status()
            .map_err(|e| format!("cannot build the bindings: {e}"))?;
        if !built.success() {
            return Err("building the bindings failed".into());
        }
    }
    let out = PathBuf::from("target/bench/bindings");
    let _ = std::fs::remove_dir_all(&out);
    let python = out.join("python");
    crate::copy_files(Path::new("crates/python/python/looprail"), &python.join("looprail"))?;
    std::fs::copy("target/release/lib_native.so", python.join("looprail/_native.abi3.so"))
        .map_err(|e| format!("target/release/lib_native.so: {e}"))?;
    let node = out.join("node/node_modules/looprail");
    crate::copy_files(Path::new("packaging/npm/looprail"), &node)?;
    std::fs::copy("target/release/liblooprail_node.so", node.join("looprail.node"))
        .map_err(|e| format!("target/release/liblooprail_node.so: {e}"))?;
    let script = out.join("node/guarded_calls.mjs");
    std::fs::copy("crates/node/bench/guarded_calls.mjs", &script).map_err(|e| e.to_string())?;

    let script = script.display().to_string();
    let (mut rust, mut py, mut js) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        rust.push(ns(Path::new("target/release/examples/guarded_calls"), &[CALLS], &[])?);
        py.push(ns(
            Path::new("python3"),
            &["crates/python/bench/guarded_calls.py", CALLS],
            &[("PYTHONPATH", &python)],
        )?);
        js.push(ns(Path::new("node"), &[&script, CALLS], &[])?);
    }
    println!(
        "{:<36} {:>10} {:>10} {:>18} {:>9} {:>5}",
        format!("per guarded tool call ({ROUNDS} rounds)"),
        "median",
        "added",
        "added, all rounds",
        "target",
        ""
    );
    println!("{:<36} {:>7.2} µs", "Rust (looprail-embed)", median(&rust) / 1000.0);
    let mut missed = 0;
    for (name, values) in [("Python (looprail module)", &py), ("Node (looprail package)", &js)] {
        let added: Vec<f64> = values.iter().zip(&rust).map(|(v, r)| v - r).collect();
        let typical = median(&added);
        let (low, high) = added.iter().fold((f64::MAX, f64::MIN), |(l, h), a| (l.min(*a), h.max(*a)));
        let pass = typical <= LIMIT_NS;
        missed += usize::from(!pass);
        println!(
            "{:<36} {:>7.2} µs {:>7.2} µs {:>8.2}-{:.2} µs {:>9} {:>5}",
            name,
            median(values) / 1000.0,
            typical / 1000.0,
            low / 1000.0,
            high / 1000.0,
            "<= 5 µs",
            if pass { "pass" } else { "FAIL" }
        );
    }
    Ok(missed)
}
