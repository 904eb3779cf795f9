//! `cargo xtask bench bindings`: the guard's cost per guarded tool call in Rust, through the
//! Python module and through the Node package, side by side (the same loop in each:
//! crates/embed/examples/guarded_calls.rs, crates/python/bench, crates/node/bench), release
//! builds, median of 5 runs each. The target: each binding adds at most 5 µs per call.

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

fn median(runs: impl Fn() -> Result<f64, String>) -> Result<f64, String> {
    let mut values = (0..5).map(|_| runs()).collect::<Result<Vec<f64>, String>>()?;
    values.sort_by(f64::total_cmp);
    Ok(values[2])
}

fn copy_dir(from: &str, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{from}: {e}"))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_file() {
            let name = path.file_name().unwrap_or_default();
            std::fs::copy(&path, to.join(name)).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Runs the comparison; the number of missed targets.
pub fn bindings_speed() -> Result<usize, String> {
    for selection in [
        &["-p", "looprail-embed", "--example", "guarded_calls"][..],
        &["-p", "looprail-python", "-p", "looprail-node"],
    ] {
        let built = Command::new(crate::cargo_bin())
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
    copy_dir("crates/python/python/looprail", &python.join("looprail"))?;
    std::fs::copy("target/release/lib_native.so", python.join("looprail/_native.abi3.so"))
        .map_err(|e| format!("target/release/lib_native.so: {e}"))?;
    let node = out.join("node/node_modules/looprail");
    copy_dir("packaging/npm/looprail", &node)?;
    std::fs::copy("target/release/liblooprail_node.so", node.join("looprail.node"))
        .map_err(|e| format!("target/release/liblooprail_node.so: {e}"))?;
    let script = out.join("node/guarded_calls.mjs");
    std::fs::copy("crates/node/bench/guarded_calls.mjs", &script).map_err(|e| e.to_string())?;

    let rust = median(|| ns(Path::new("target/release/examples/guarded_calls"), &[CALLS], &[]))?;
    let py = median(|| {
        ns(Path::new("python3"), &["crates/python/bench/guarded_calls.py", CALLS], &[("PYTHONPATH", &python)])
    })?;
    let js = median(|| ns(Path::new("node"), &[&script.display().to_string(), CALLS], &[]))?;
    println!(
        "{:<44} {:>12} {:>12} {:>10} {:>6}",
        "per guarded tool call (median of 5)", "time", "added", "target", ""
    );
    println!("{:<44} {:>9.2} µs {:>12} {:>10} {:>6}", "Rust (looprail-embed)", rust / 1000.0, "", "", "");
    let mut missed = 0;
    for (name, value) in [("Python (looprail module)", py), ("Node (looprail package)", js)] {
        let added = value - rust;
        let pass = added <= LIMIT_NS;
        missed += usize::from(!pass);
        println!(
            "{:<44} {:>9.2} µs {:>9.2} µs {:>10} {:>6}",
            name,
            value / 1000.0,
            added / 1000.0,
            "<= 5 µs",
            if pass { "pass" } else { "FAIL" }
        );
    }
    Ok(missed)
}
